"""The vocabulary: the words and patterns every face of hypd shares, stated once.

Operation statuses and step phases (`vocabulary.operations`), roles (`vocabulary.roles`),
capacity types, EFA modes and the EFA rule (`vocabulary.capacity`), the Kubernetes versions
hypd offers (`vocabulary.kubernetes_versions`), and the identifier patterns of AWS and
Kubernetes (`vocabulary.patterns`: AWS's read from botocore's service shapes where botocore
has them). The engine, the app, the schemas, the cloud adapters and the MCP server import
them from here; the dashboard reads them through the OpenAPI document, where the schemas put
them as enums and patterns.

Why a leaf: every part may import it, so it imports nothing of hypd's — only the standard
library and botocore. A word typed anywhere else is a copy that can drift (a test greps the
tree for them, tests/test_vocabulary_spelled_once.py).
"""
