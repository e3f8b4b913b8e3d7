"""The adapters: every call hypd makes to AWS (through the one client factory, aws.py) and to
a cluster's Kubernetes API (eks.py, kube.py), one module per concern, with no Flask and no
Celery in them, so the web layer and the workers call the same functions.

Each adapter's errors subclass `errors.Refusal` (a stable code) or `errors.NotYet` (still
settling), which the engine and the REST envelope both understand. The settings, metrics
and log format every layer needs live here too, because every part may import this one.
Imports nothing of hypd's but the vocabulary (its capacity words, the EFA rule and the
identifier patterns the adapters check values against)."""
