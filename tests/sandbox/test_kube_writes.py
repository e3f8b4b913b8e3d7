"""A local Kubernetes' writes as the fault campaign sees them: each write logged with its
outcome, each object a client created counted (a POST, or a server-side apply that made it —
not one that changed it), injected faults answered as the API server answers an overloaded
or failing request without the store ever seeing the write, and a `before` hold parking a
write before the store saw it."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from sandbox.faults import FaultBook
from sandbox.holds import HoldBook
from sandbox.kube import KubeRegistry
from sandbox.kube.access import CLUSTER_ADMIN
from sandbox.kube.writes import KubeWrites
from tests.sandbox.ekskit import api_client, call, eks_token
from tests.sandbox.test_local_kube import APPLY, ME, _described, _sts

CLUSTER = "kw-main"


@pytest.fixture(scope="module")
def books() -> Iterator[tuple[KubeRegistry, HoldBook, FaultBook, KubeWrites]]:
    holds, faults, writes = HoldBook(), FaultBook(), KubeWrites()
    registry = KubeRegistry(holds=holds, faults=faults, writes=writes)
    try:
        registry.ensure(CLUSTER)
        registry.set_access(CLUSTER, ME, {CLUSTER_ADMIN: {"type": "cluster"}})
        yield registry, holds, faults, writes
    finally:
        holds.close()
        registry.close()


@pytest.fixture(scope="module")
def api(books: Any) -> k8s.ApiClient:
    registry = books[0]
    return api_client(_described(registry.get(CLUSTER)), eks_token(_sts(), CLUSTER))


def _cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _creates(writes: KubeWrites, namespace: str | None) -> dict[str, int]:
    return {f"{c['resource']} {c['name']}": c["count"] for c in writes.counters()["creates"]
            if c["namespace"] == namespace}


def test_creates_are_counted_per_object_and_every_write_is_logged(books, api) -> None:
    writes = books[3]
    ns = f"t-{uuid.uuid4().hex[:6]}"
    v1 = k8s.CoreV1Api(api)
    since = writes.writes()[-1]["seq"] if writes.writes() else 0
    v1.create_namespace({"metadata": {"name": ns}})
    v1.create_namespaced_config_map(ns, _cm("posted"))
    with pytest.raises(k8s.ApiException):
        v1.create_namespaced_config_map(ns, _cm("posted"))  # 409: logged, not counted
    path = f"/api/v1/namespaces/{ns}/configmaps/applied"
    query = [("fieldManager", "hypd")]
    assert call(api, "PATCH", path, _cm("applied", a="1"), APPLY, query)[0] == 201
    assert call(api, "PATCH", path, _cm("applied", a="2"), APPLY, query)[0] == 200
    v1.delete_namespaced_config_map("posted", ns)
    v1.create_namespaced_config_map(ns, _cm("posted"))  # made again after its delete
    assert call(api, "POST", f"/api/v1/namespaces/{ns}/configmaps", _cm("dry"),
                query=[("dryRun", "All")])[0] == 201
    assert _creates(writes, ns) == {"configmaps posted": 2, "configmaps applied": 1}
    assert _creates(writes, None) == {f"namespaces {ns}": 1}
    logged = [(w["verb"], w["name"], w["status"], w["created"])
              for w in writes.writes(CLUSTER, since)]
    assert logged == [("create", ns, 201, True), ("create", "posted", 201, True),
                      ("create", "posted", 409, False), ("patch", "applied", 201, True),
                      ("patch", "applied", 200, False), ("delete", "posted", 200, False),
                      ("create", "posted", 201, True), ("create", "dry", 201, False)]


def test_a_fault_answers_instead_of_the_api_server(books, api) -> None:
    _, _, faults, writes = books
    ns = f"t-{uuid.uuid4().hex[:6]}"
    v1 = k8s.CoreV1Api(api)
    v1.create_namespace({"metadata": {"name": ns}})
    faults.add({"service": "kubernetes", "action": "create configmaps", "kind": "throttle"})
    faults.add({"service": "kubernetes", "action": "create configmaps",
                "kind": "server_error"})
    for status, reason in ((429, "TooManyRequests"), (500, "InternalError")):
        with pytest.raises(k8s.ApiException) as caught:
            v1.create_namespaced_config_map(ns, _cm("x"))
        assert (caught.value.status, reason) == (status, reason)
        assert reason in caught.value.body
    with pytest.raises(k8s.ApiException) as caught:
        v1.read_namespaced_config_map("x", ns)
    assert caught.value.status == 404  # the store never saw the faulted writes
    v1.create_namespaced_config_map(ns, _cm("x"))
    assert _creates(writes, ns) == {"configmaps x": 1}
    assert [w["fault"] for w in writes.writes(CLUSTER) if w["namespace"] == ns
            and w["verb"] == "create"] == ["throttle", "server_error", None]


def _wait_held(holds: HoldBook, hold_id: str) -> None:
    deadline = time.monotonic() + 10
    while holds.get(hold_id)["state"] != "held":
        assert time.monotonic() < deadline, holds.get(hold_id)
        time.sleep(0.02)


def test_a_before_hold_parks_the_write_before_the_store_sees_it(books, api) -> None:
    registry, holds, _, _ = books
    ns = f"t-{uuid.uuid4().hex[:6]}"
    v1 = k8s.CoreV1Api(api)
    v1.create_namespace({"metadata": {"name": ns}})
    hold = holds.arm({"service": "kubernetes", "action": "create configmaps", "when": "before"})
    done = threading.Event()
    writer = threading.Thread(target=lambda: (v1.create_namespaced_config_map(ns, _cm("held")),
                                              done.set()))
    writer.start()
    try:
        _wait_held(holds, hold.id)
        assert registry.get(CLUSTER).get_object("v1", "ConfigMap", "held", ns) is None
        assert not done.is_set()
    finally:
        holds.release(hold.id)
        writer.join(10)
    assert done.is_set()
    assert registry.get(CLUSTER).get_object("v1", "ConfigMap", "held", ns) is not None

    # dropped: the store never sees it
    hold = holds.arm({"service": "kubernetes", "action": "create configmaps", "when": "before"})
    refused: list[int] = []

    def create() -> None:
        try:
            v1.create_namespaced_config_map(ns, _cm("dropped"))
        except k8s.ApiException as exc:
            refused.append(exc.status)

    writer = threading.Thread(target=create)
    writer.start()
    try:
        _wait_held(holds, hold.id)
    finally:
        holds.release(hold.id, drop=True)
        writer.join(10)
    assert refused == [503]
    assert registry.get(CLUSTER).get_object("v1", "ConfigMap", "dropped", ns) is None
