"""Helpers for the feature tests: the REST calls, and what they observe through real
clients only — boto3 against the sandbox, the kubernetes client built the way cloud/eks.py
builds it (the cluster's endpoint and CA from DescribeCluster, an EKS token), and the
sandbox's control API for counters and the call log."""

from __future__ import annotations

import uuid
from typing import Any

from cloud import eks, kube, spaces
from tests.app.test_clusters_api import _body, _client, _create

REGION = "us-west-2"
MUTATING_PREFIXES = ("Create", "Delete", "Update", "Put", "Attach", "Detach", "Associate",
                     "Disassociate", "Tag", "Untag", "Batch", "Start", "Add", "Remove")


def features(stack, cluster: str) -> dict[str, Any]:
    with stack.client("viewer") as c:
        reply = c.get(f"/api/v1/clusters/{cluster}/features")
    assert reply.status_code == 200, reply.text
    return reply.json()


def patch(stack, cluster: str, body: dict[str, Any], token: str = "operator"):
    with stack.client(token) as c:
        return c.patch(f"/api/v1/clusters/{cluster}/features", json=body)


def toggle(stack, cluster: str, body: dict[str, Any], timeout: float = 120) -> dict | None:
    """PATCH and follow the operation to its end; None when nothing needed doing."""
    reply = patch(stack, cluster, body)
    if reply.status_code == 200:
        assert reply.json()["changed"] is False, reply.text
        return None
    assert reply.status_code == 202, reply.text
    return stack.wait_operation(reply.json()["operation"]["id"], timeout)


def state(stack, cluster: str, feature: str) -> str:
    return features(stack, cluster)["features"][feature]["state"]


def kube_api(stack, cluster: str):
    """The cluster's Kubernetes API as cloud/eks.py reaches it: TLS verified against the CA
    DescribeCluster reports, an EKS bearer token signed with the sandbox's credentials."""
    found = _client(stack, "eks").describe_cluster(name=cluster)["cluster"]
    sts = _client(stack, "sts")
    client = eks.ClusterClient(cluster, REGION, found["endpoint"],
                               found["certificateAuthority"]["data"],
                               token_source=lambda name, region: eks.eks_token(name, region,
                                                                               sts=sts))
    return client.api


def get(api, api_version: str, kind: str, name: str, namespace: str | None = None):
    return kube.get_object(api, api_version, kind, name, namespace)


def role_names(stack, cluster: str) -> set[str]:
    iam = _client(stack, "iam")
    pages = iam.get_paginator("list_roles").paginate()
    return {r["RoleName"] for page in pages for r in page["Roles"]
            if r["RoleName"].startswith(f"hypd-{cluster}-")}


def mutations_since(stack, since: int) -> list[dict[str, Any]]:
    """Every successful mutating AWS call after `since` (call log seq)."""
    return [c for c in stack.sandbox.calls(since=since)
            if 200 <= c["status"] < 300 and c["action"].startswith(MUTATING_PREFIXES)]


def last_seq(stack) -> int:
    calls = stack.sandbox.calls()
    return calls[-1]["seq"] if calls else 0


def oidc_providers(stack) -> list[str]:
    reply = _client(stack, "iam").list_open_id_connect_providers()
    return [p["Arn"] for p in reply["OpenIDConnectProviderList"]]


def spaces_cluster(stack) -> dict[str, Any]:
    """One node with the spaces feature on, shared by the Dev spaces tests of this test
    process (each space has its own name); the reply to a space asked for before the feature
    was on, and what the cluster then had under that space's name (nothing)."""
    stack.wait_idle()
    name = f"dev-{uuid.uuid4().hex[:5]}"
    op = _create(stack, _body(name, instance_count=1))
    assert op["status"] == "succeeded", op
    with stack.client() as c:
        refused = c.post(f"/api/v1/clusters/{name}/spaces",
                         json={"name": "early", "instance_group": "workers"})
    early = kube.get_object(stack.kube(name).api, spaces.API_VERSION, spaces.KIND, "early",
                            spaces.NAMESPACE)
    op = toggle(stack, name, {"spaces": {"enabled": True}}, timeout=180)
    assert op is not None and op["status"] == "succeeded", op
    assert state(stack, name, "spaces") == "on"
    return {"name": name, "refused": refused, "early": early}
