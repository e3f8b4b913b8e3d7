"""A Flask app context holding a fake operation store (newest first, filtered by target as
the real one filters) and a real Redis for the registry; EKS is a dict (`aws_eks`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask

from app.readmodels import clusters as readmodel
from cloud.settings import Settings
from tasks.engine.store import OperationStore


class FakeStore:
    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []  # oldest first, as they were recorded

    def add(self, kind: str, name: str, status: str = "succeeded", region: str = "us-west-2",
            steps: list[dict[str, Any]] | None = None, target: str | None = None) -> dict:
        op = {"id": f"op_{len(self.ops):03d}", "kind": kind, "status": status,
              "target": target or f"cluster/{name}", "params": {"name": name, "region": region},
              "steps": steps or []}
        self.ops.append(op)
        return op

    def list(self, status=None, kind=None, target=None, limit=50) -> list[dict[str, Any]]:
        found = [op for op in reversed(self.ops)
                 if not target or op["target"] == target or op["target"].startswith(target + "/")]
        return found[:limit]

    newest_by_child = OperationStore.newest_by_child
    """The real query over the records above (`unfinished` reads a lock table this fake
    does not keep)."""


@pytest.fixture
def store() -> FakeStore:
    return FakeStore()


class FakeEks:
    """describe_cluster by (region, name), counting the questions asked."""

    def __init__(self) -> None:
        self.clusters: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []

    def add(self, name: str, tags: dict[str, str], region: str = "us-west-2") -> dict:
        found = {"name": name, "arn": f"arn:aws:eks:{region}:123456789012:cluster/{name}",
                 "status": "ACTIVE", "version": "1.33", "tags": tags}
        self.clusters[(region, name)] = found
        return found

    def describe(self, client: Any, name: str) -> dict[str, Any] | None:
        self.calls.append((client.region, name))
        return self.clusters.get((client.region, name))


@pytest.fixture
def aws_eks(monkeypatch) -> FakeEks:
    fake = FakeEks()
    monkeypatch.setattr(readmodel.aws, "client",
                        lambda service, region=None: SimpleNamespace(region=region))
    monkeypatch.setattr(readmodel.eks, "describe", fake.describe)
    return fake


@pytest.fixture
def app_ctx(store, redis_db):
    app = Flask(__name__)
    app.extensions["hypd.settings"] = Settings(region="us-west-2")
    app.extensions["hypd.engine"] = SimpleNamespace(store=store)
    app.extensions["hypd.redis"] = redis_db
    with app.app_context():
        yield app
