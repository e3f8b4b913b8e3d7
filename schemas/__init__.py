"""marshmallow schemas: what a request and a reply may be. Imports nothing of ours."""
