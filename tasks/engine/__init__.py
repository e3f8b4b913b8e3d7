"""The operation engine: persisted steps, locks, idempotency, events.

Every mutation in hypd is an operation run by this engine; nothing else mutates AWS.
"""
