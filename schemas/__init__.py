"""marshmallow schemas: what a request and a reply may be (the OpenAPI document is made of
them). They import only cloud's Kubernetes version table."""
