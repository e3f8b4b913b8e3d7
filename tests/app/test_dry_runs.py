"""A plan for every change: each route that changes AWS or Kubernetes through an operation
answers `?dry_run=true` with that operation rehearsed — its steps in order, the calls each
would make, what exists already and would be adopted — and records nothing: no operation,
no AWS change (the local AWS's counters), no Kubernetes object (only `dryRun=All` writes)."""

from __future__ import annotations

import uuid
from typing import Any

from app import create_app
from app.permissions import declarations
from cloud.settings import Settings
from tests.app.dryrunkit import calls_in_order, rehearsed, steps_of
from tests.app.jobkit import TORCHRUN, job_name

EXEMPT = {
    "invoke_endpoint": "sends a request to a model; changes neither AWS nor Kubernetes",
    "cancel_operation": "asks a running operation to stop",
    "retry_operation": "re-runs a recorded operation",
    "set_active_cluster": "the panel's own choice of cluster",
    "set_cluster_budget": "the panel's own budget record",
    "clear_cluster_budget": "the panel's own budget record",
    "set_team_budget": "the panel's own budget record",
    "clear_team_budget": "the panel's own budget record",
    "import_cluster": "the panel's own record of a cluster it only reads",
    "get_mlflow_ui_url": "presigns a URL; changes nothing",
    "sign_in_space": "a one-use code for a browser; changes nothing in AWS or Kubernetes",
}
"""Operator routes that change nothing in AWS or Kubernetes (the issue names the first
four); every other operator route that is not a read declares its dry run."""


def test_every_change_declares_its_dry_run():
    app = create_app(Settings(redis_url="redis://127.0.0.1:1/0"))
    with app.test_client() as client:
        spec = client.get("/api/v1/openapi.json").get_json()
    operation_ids = {(method.upper(), path): op["operationId"]
                     for path, item in spec["paths"].items()
                     for method, op in item.items() if method != "parameters"}
    changes = 0
    for rule in app.url_map.iter_rules():
        path = "/" + "/".join(
            "{" + part.split(":")[-1].strip("<>") + "}" if part.startswith("<") else part
            for part in rule.rule.strip("/").split("/"))
        for (endpoint, method), declared in declarations(app).items():
            if endpoint != rule.endpoint or method in ("GET", "HEAD", "OPTIONS"):
                continue
            name = operation_ids.get((method, path))
            if name in EXEMPT:
                assert not declared.dry_run, name
                continue
            changes += 1
            assert declared.dry_run, f"{method} {path} ({name}) has no dry run"
            params = {p["name"] for p in spec["paths"][path][method.lower()].get(
                "parameters", []) if p.get("in") == "query"}
            assert "dry_run" in params, f"{method} {path} documents no dry_run"
    assert changes >= 30


# -- networks ---------------------------------------------------------------------------------

def test_a_network_create_is_rehearsed_and_nothing_is_made(stack):
    name = f"plan-{uuid.uuid4().hex[:6]}"
    plan = rehearsed(stack, "POST", "/api/v1/networks", {"name": name}, kind="network.create")
    steps = steps_of(plan)
    assert list(steps)[:3] == ["vpc", "subnets", "internet_gateway"]
    vpc = steps["vpc"]
    assert vpc["plan"] == "changes" and vpc["reads"] >= 1
    assert vpc["calls"][0]["service"] == "ec2"
    assert vpc["calls"][0]["operation"] == "CreateVpc"
    assert vpc["calls"][0]["params"]["CidrBlock"] == "10.0.0.0/16"
    made = [c["operation"] for s in plan["steps"] for c in s["calls"]]
    for expected in ("CreateSubnet", "CreateInternetGateway", "CreateNatGateway",
                     "CreateSecurityGroup"):
        assert expected in made, made
    assert steps["nat_gateway"]["then_waits"] is True
    assert plan["would_fail"] is None
    assert not stack.aws("ec2").describe_vpcs(
        Filters=[{"Name": "tag:hypd:network", "Values": [name]}])["Vpcs"]


# -- every other change, on one cluster --------------------------------------------------------

def _on_training(cluster: str) -> list[tuple[str, str, str, dict[str, Any] | None]]:
    """(kind, method, path, body): a valid request of each change the training cluster
    takes as it is (spaces, endpoints, a Kubernetes upgrade: their own modules' clusters)."""
    base = f"/api/v1/clusters/{cluster}"
    unique = uuid.uuid4().hex[:4]  # the cluster is shared: names others may have taken
    return [
        ("cluster.stage", "POST", f"{base}/stages/network/run", None),
        ("cluster.software_update", "POST", f"{base}/software-update", {}),
        ("instance_group.create", "POST", f"{base}/instance-groups",
         {"name": f"more-{unique}", "instance_type": "ml.g5.8xlarge", "instance_count": 1}),
        ("instance_group.update", "PATCH", f"{base}/instance-groups/workers",
         {"instance_count": 3}),
        ("job.create", "POST", f"{base}/jobs", {"name": job_name("plan"), **TORCHRUN}),
        ("storage.create", "POST", f"{base}/storage", {"name": f"data-{unique}", "kind": "s3"}),
        ("model.download", "POST", f"{base}/models",
         {"name": f"tiny-{unique}", "source": "huggingface", "repo": "acme/tiny"}),
        ("mlflow.attach", "PUT", f"{base}/mlflow", {}),
    ]


CALLS = {
    "cluster.software_update": [("sagemaker", "UpdateClusterSoftware")],
    "instance_group.create": [("ec2", "CreateSubnet"), ("ec2", "AssociateRouteTable")],
    "instance_group.update": [("sagemaker", "UpdateCluster")],
    "job.create": [("kubernetes", "HyperPodPyTorchJob")],
    "storage.create": [("s3", "CreateBucket"), ("s3", "PutPublicAccessBlock"),
                       ("kubernetes", "PersistentVolume"),
                       ("kubernetes", "PersistentVolumeClaim")],
    "model.download": [("iam", "CreateRole"), ("iam", "PutRolePermissionsBoundary"),
                       ("kubernetes", "ServiceAccount"), ("kubernetes", "Job")],
    "mlflow.attach": [("iam", "CreateRole"), ("sagemaker", "CreateMlflowTrackingServer"),
                      ("eks", "CreatePodIdentityAssociation"), ("kubernetes", "ConfigMap")],
}
"""Changes each plan must list, in this order (a Kubernetes change by the kind it writes)."""


def test_each_change_on_a_cluster_is_rehearsed_and_nothing_is_made(stack, training):
    stack.wait_idle()
    for kind, method, path, body in _on_training(training["name"]):
        plan = rehearsed(stack, method, path, body, kind=kind)
        steps = steps_of(plan)
        assert plan["would_fail"] is None, (kind, plan["message"])
        if kind == "cluster.stage":  # a re-run adopts what the create made: no change
            assert plan["changes"] == 0
            assert {s["plan"] for s in steps.values()} == {"exists"}
            assert steps["vpc"]["found"]["vpc_id"].startswith("vpc-")
            continue
        calls = [c for s in plan["steps"] for c in s["calls"]]
        assert calls_in_order(plan, CALLS[kind]), (kind, calls)
        assert not any(c["service"] == "kubernetes" and c["operation"] == "DELETE"
                       for c in calls), kind
    # a job's namespace is there already: the plan says so and would not make it again
    plan = rehearsed(stack, "POST", f"/api/v1/clusters/{training['name']}/jobs",
                     {"name": job_name("plan"), **TORCHRUN}, kind="job.create")
    assert steps_of(plan)["namespace"]["plan"] == "exists"


def test_a_dry_run_is_refused_as_the_change_would_be(stack, training):
    """The route's own checks run first: the plan of a request the change would refuse is
    that refusal (here: an instance group that does not exist), nothing else."""
    with stack.client("viewer") as c:
        reply = c.patch(f"/api/v1/clusters/{training['name']}/instance-groups/nope",
                        params={"dry_run": "true"}, json={"instance_count": 2})
        assert reply.status_code == 404, reply.text
        plain = c.patch(f"/api/v1/clusters/{training['name']}/instance-groups/workers",
                        json={"instance_count": 2})
        assert plain.status_code == 403  # without dry_run, a change is an operator's


def test_a_destroy_plan_lists_its_calls_and_removes_nothing(stack, training):
    """A destructive route's plan: what it would remove, what would break, and its
    operation rehearsed — every delete written down, none sent (the cluster is whole after:
    the kit checks the local AWS's counters and that every Kubernetes write was a dry run)."""
    stack.wait_idle()
    cluster = training["name"]
    base = f"/api/v1/clusters/{cluster}"
    with stack.client() as c:
        nodes = c.get(f"{base}/nodes").json()["items"]
    node = nodes[0]["id"]
    plan = rehearsed(stack, "DELETE", base, kind="cluster.delete")
    assert "Delete the HyperPod cluster" in plan["removes"]
    assert calls_in_order(plan, [
        ("kubernetes", "persistentvolumeclaims"), ("kubernetes", "persistentvolumes"),
        ("sagemaker", "DeleteCluster"), ("eks", "DeleteCluster"), ("iam", "DeleteRole"),
        ("ec2", "DeleteNatGateway"), ("ec2", "DeleteVpc")]), plan
    steps = steps_of(plan)
    assert steps["in_use"]["plan"] == "exists" and steps["hyperpod_cluster"]["plan"] == "changes"
    for action, call in (("replace", "BatchReplaceClusterNodes"),
                         ("reboot", "BatchRebootClusterNodes")):
        plan = rehearsed(stack, "POST", f"{base}/nodes/{action}", {"node_ids": [node]},
                         kind=f"nodes.{action}")
        sent = [c for s in plan["steps"] for c in s["calls"]]
        assert [c["operation"] for c in sent if c["service"] == "sagemaker"] == [call], sent
    with stack.client() as c:
        assert c.get(base).json()["eks"]["status"] == "ACTIVE"
        assert [n["id"] for n in c.get(f"{base}/nodes").json()["items"]] == [
            n["id"] for n in nodes]


def test_a_change_refuses_a_query_it_does_not_take(stack):
    """A change takes no query but its dry_run: anything else is a 422 naming it, not
    ignored while the change goes ahead (a typo of dry_run must never make the network)."""
    name = f"typo-{uuid.uuid4().hex[:6]}"
    with stack.client() as c:
        reply = c.post("/api/v1/networks", params={"dryrun": "true"}, json={"name": name})
        assert reply.status_code == 422, reply.text
        assert "dryrun" in reply.json()["error"]["details"]["fields"]
        ops = c.get("/api/v1/operations", params={"target": f"network/{name}"}).json()
    assert ops["items"] == []
