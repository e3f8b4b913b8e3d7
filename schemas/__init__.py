"""marshmallow schemas: what a request and a reply may be (the OpenAPI document is made of
them). They import nothing of hypd's but the vocabulary: its words become the enums, its
patterns the patterns, and its rules extensions (`x-hypd-…`) of the document, which is how
the MCP server and the dashboard read them."""
