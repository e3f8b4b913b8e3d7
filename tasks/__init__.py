"""The operations: every change hypd makes, run as durable steps by Celery workers.

`engine/` is the one operation engine (records in Redis, per-target locks, a step at a time,
retries that never repeat a mutation, cancel and the sweeper); each other module declares the
steps of one resource's kinds, and `kinds.py` is their table. Steps call `cloud/` only.
"""
