"""Clusters through REST on the full stack (sandbox AWS + local Kubernetes): the staged
pipeline, what the sandbox received, stage faults and re-runs, a killed worker at the eks
stage, delete, import, dry run and preflight."""

from __future__ import annotations

import ipaddress
import uuid

import pytest
import yaml

from tests.app.test_networks_api import _ec2
from tests.stack import wait_until
from vocabulary.capacity import HYPERPOD_INSTANCES, LIST_PRICE

ZONE = "us-west-2a"
TYPE = "ml.g5.8xlarge"


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:5]}"


def _body(name: str, **extra) -> dict:
    return {"name": name, "availability_zone": ZONE, "instance_type": TYPE,
            "instance_count": 2, **extra}


def _client(stack, service: str):
    return stack.aws(service)


def _create(stack, body: dict) -> dict:
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json=body)
    assert reply.status_code == 202, reply.text
    return stack.wait_operation(reply.json()["operation"]["id"], timeout=180)


def _calls(stack, service: str, action: str, since: int = 0) -> list[dict]:
    return [c for c in stack.sandbox.calls(service=service, action=action, since=since)
            if 200 <= c["status"] < 300]


def _last_seq(stack) -> int:
    calls = stack.sandbox.calls()
    return calls[-1]["seq"] if calls else 0


@pytest.fixture(scope="module")
def cluster(stack):
    """One cluster made through REST and followed to its end, shared by the checks."""
    stack.wait_idle()
    name = _name("lab")
    since = _last_seq(stack)
    op = _create(stack, _body(name, deep_health_checks=True))
    return name, op, since


def test_pipeline_finishes_with_every_stage_visible(cluster):
    _, op, _ = cluster
    assert op["status"] == "succeeded", op
    stages = [s["stage"] for s in op["steps"]]
    assert list(dict.fromkeys(stages)) == ["network", "eks", "activate", "dependencies",
                                           "hyperpod", "storage"]
    assert all(s["phase"] == "succeeded" for s in op["steps"])


def test_the_clusters_roles_are_under_hypd_with_the_permissions_boundary(stack, cluster):
    """Read back from IAM: what keeps hypd's own role from escalating through the roles it
    creates (deploy/cloudformation.yaml allows CreateRole and PassRole only there)."""
    from tests.stack import BOUNDARY_ARN

    name, _, _ = cluster
    iam = _client(stack, "iam")
    roles = [r for r in iam.list_roles(PathPrefix="/hypd/")["Roles"]
             if r["RoleName"].startswith(f"hypd-{name}-")]
    assert {r["RoleName"].removeprefix(f"hypd-{name}-") for r in roles} == {
        "eks-cluster", "hp-exec", "hp-cluster"}
    for role in roles:
        got = iam.get_role(RoleName=role["RoleName"])["Role"]
        assert got["Path"] == "/hypd/"
        assert got["Arn"].endswith(f":role/hypd/{role['RoleName']}")
        assert got["PermissionsBoundary"]["PermissionsBoundaryArn"] == BOUNDARY_ARN


def test_hyperpod_request_carried_recovery_provisioning_and_the_allocated_subnet(stack, cluster):
    name, op, since = cluster
    creates = [c for c in _calls(stack, "sagemaker", "CreateCluster", since)
               if c["params"]["ClusterName"] == name]
    assert len(creates) == 1
    request = creates[0]["params"]
    assert request["NodeRecovery"] == "Automatic"
    assert request["NodeProvisioningMode"] == "Continuous"
    assert request["ClusterRole"].endswith(f"role/hypd/hypd-{name}-hp-cluster")
    group = request["InstanceGroups"][0]
    assert group["InstanceType"] == TYPE and group["InstanceCount"] == 2
    assert group["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert group["NetworkInterface"]["InterfaceType"] == "efa"  # the type has EFA
    assert group["CapacityRequirements"] == {"OnDemand": {}}
    subnet_id = group["OverrideVpcConfig"]["Subnets"][0]
    subnet = _ec2(stack).describe_subnets(SubnetIds=[subnet_id])["Subnets"][0]
    assert ipaddress.ip_network(subnet["CidrBlock"]).prefixlen == 20
    assert subnet["AvailabilityZone"] == ZONE
    tags = {t["Key"]: t["Value"] for t in subnet["Tags"]}
    assert tags["hypd:cluster"] == name
    compute = next(s for s in op["steps"] if s["name"] == "compute_subnet")
    assert compute["resources"]["subnet_id"] == subnet_id


def test_eks_created_with_api_auth_and_panel_access(stack, cluster):
    name, _, since = cluster
    creates = [c for c in _calls(stack, "eks", "CreateCluster", since)
               if c["params"]["name"] == name]
    assert len(creates) == 1
    access = creates[0]["params"]["accessConfig"]
    assert access["authenticationMode"] in ("API", "API_AND_CONFIG_MAP")
    assert access["bootstrapClusterCreatorAdminPermissions"] is False
    assert creates[0]["params"]["clientRequestToken"]
    eks = _client(stack, "eks")
    entries = eks.list_access_entries(clusterName=name)["accessEntries"]
    assert entries
    policies = eks.list_associated_access_policies(clusterName=name,
                                                   principalArn=entries[0])
    assert any(p["policyArn"].endswith("AmazonEKSClusterAdminPolicy")
               for p in policies["associatedAccessPolicies"])


def test_kubernetes_client_reached_the_local_cluster_over_tls_with_a_token(stack, cluster):
    """The sandbox's local Kubernetes serves only TLS and refuses requests without a valid
    EKS token of a principal with an access policy: the PVC being there proves the panel's
    client got through both."""
    name = cluster[0]
    local = stack.kube(name)
    assert local.url.startswith("https://127.0.0.1:")
    claims = local.list_objects("v1", "PersistentVolumeClaim", namespace="default")
    assert [c["metadata"]["name"] for c in claims] == ["hypd-s3"]
    assert claims[0]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "hypd"
    volumes = local.list_objects("v1", "PersistentVolume")
    assert volumes[0]["spec"]["csi"]["driver"] == "s3.csi.aws.com"


def test_list_describe_kubeconfig_and_active(stack, cluster):
    name = cluster[0]
    with stack.client("viewer") as c:
        listed = {i["name"]: i for i in c.get("/api/v1/clusters").json()["items"]}
        assert listed[name]["eks"]["status"] == "ACTIVE"
        detail = c.get(f"/api/v1/clusters/{name}").json()
        assert {s["name"]: s["status"] for s in detail["stages"]} == {
            s: "succeeded" for s in ("network", "eks", "activate", "dependencies", "hyperpod",
                                     "storage")}
        assert detail["hyperpod"]["node_recovery"] == "Automatic"
        assert detail["instance_groups"][0]["name"] == "workers"

        # the simulator's Nodes carry HyperPod's health label: counted by health
        def healthy() -> bool:
            nodes = c.get(f"/api/v1/clusters/{name}").json()["nodes"]
            return (nodes["by_health"] or {}).get("Schedulable") == 2 == nodes["total"]

        wait_until(healthy, 30, what="two Schedulable nodes")
        kubeconfig = c.get(f"/api/v1/clusters/{name}/kubeconfig").json()["kubeconfig"]
        user = kubeconfig["users"][0]["user"]["exec"]
        assert user["command"] == "aws" and "get-token" in user["args"]
        # the same kubeconfig as the file kubectl takes: ?format=yaml, or Accept
        path = f"/api/v1/clusters/{name}/kubeconfig"
        as_file = c.get(path, params={"format": "yaml"})
        assert as_file.headers["content-type"].startswith("application/yaml"), as_file.text
        assert f"kubeconfig-{name}.yaml" in as_file.headers["content-disposition"]
        assert yaml.safe_load(as_file.text) == kubeconfig
        accepted = c.get(path, headers={"Accept": "application/yaml"})
        assert yaml.safe_load(accepted.text) == kubeconfig
        assert c.get(path, params={"format": "json"}).json() == {"kubeconfig": kubeconfig}
        assert c.get(path, params={"format": "xml"}).status_code == 422
        assert c.get("/api/v1/clusters/nope-nope").status_code == 404
    with stack.client("operator") as c:  # the create made it the creator's active cluster
        assert c.get("/api/v1/active-cluster").json() == {"name": name}
    with stack.client("viewer") as c:  # ... not everybody's
        assert c.get("/api/v1/active-cluster").json() == {"name": None}
        assert c.put("/api/v1/active-cluster", json={"name": name}).status_code == 403


def test_dry_run_plans_and_prices_and_changes_nothing(stack):
    stack.wait_idle()
    before = stack.sandbox.counters()["by_action"]
    with stack.client("viewer") as c:
        reply = c.post("/api/v1/clusters", params={"dry_run": "true"},
                       json=_body(_name("dry")))
    assert reply.status_code == 200, reply.text
    plan = reply.json()
    assert plan["dry_run"] is True
    steps = [s["step"] for s in plan["plan"][0]["steps"]]
    assert steps[0] == "vpc" and steps[-1] == "s3_volume"
    assert plan["cost"]["hourly_usd"] > 0
    assert any(i["kind"] == "hyperpod_instances" for i in plan["cost"]["items"])
    assert plan["preflight"]["ok"] is True
    assert stack.sandbox.counters()["by_action"] == before


def test_validation_refuses_what_aws_would(stack):
    with stack.client() as c:
        bad_zone = c.post("/api/v1/clusters", json=_body("vz", availability_zone="us-west-2z"))
        assert bad_zone.status_code == 422
        not_offered = c.post("/api/v1/clusters", json=_body("vt", instance_type="ml.zz9.huge"))
        assert not_offered.status_code == 422
        assert "not offered" in not_offered.json()["error"]["message"]
        bad_name = c.post("/api/v1/clusters", json=_body("Bad_Name"))
        assert "name" in bad_name.json()["error"]["details"]["fields"]
        plan_missing = c.post("/api/v1/clusters", json=_body("tp", capacity_type="training-plan"))
        assert "training_plan_arn" in plan_missing.json()["error"]["details"]["fields"]
        # g5.8xlarge has one EFA interface: efa-only is refused before anything is made
        efa_only = c.post("/api/v1/clusters", json=_body("eo", efa_mode="efa-only"))
        assert efa_only.status_code == 422
        assert "efa_mode" in efa_only.json()["error"]["details"]["fields"]
        # EKS ended 1.28's extended support on 2025-11-26: refused, with the date, not sent
        before = stack.sandbox.counters()["by_action"]
        ended = c.post("/api/v1/clusters", json=_body("ke", kubernetes_version="1.28"))
        assert ended.status_code == 422
        [why] = ended.json()["error"]["details"]["fields"]["kubernetes_version"]
        assert why.startswith("EKS ended support for Kubernetes 1.28 on 2025-11-26"), why
        assert stack.sandbox.counters()["by_action"] == before


def test_preflight_reports_a_configured_quota_shortfall(stack):
    try:
        stack.sandbox.set_quota(1, quota_name=f"{TYPE} for cluster usage")
        with stack.client("viewer") as c:
            report = c.get("/api/v1/preflight",
                           params={"instance_type": TYPE, "count": 4}).json()
        assert report["ok"] is False
        failed = [ch for ch in report["checks"] if not ch["ok"]]
        assert failed and failed[0]["required"] == 4
        assert f"{TYPE} for cluster usage" in failed[0]["message"]
        assert failed[0]["how_to_fix"]
        # and what the four instances would add per hour: the instances alone, priced
        [added] = report["adds"]["items"]
        assert (added["kind"], added["quantity"], added["basis"]) == (
            HYPERPOD_INSTANCES, 4, LIST_PRICE)
        assert added["unit_usd"] > 0
        assert added["hourly_usd"] == pytest.approx(4 * added["unit_usd"])
        assert report["adds"]["hourly_usd"] == pytest.approx(added["hourly_usd"])
        with stack.client() as c:  # the create runs the same checks first
            refused = c.post("/api/v1/clusters", json=_body(_name("quota"), instance_count=4))
        assert refused.status_code == 412
        assert refused.json()["error"]["code"] == "precondition_failed"
    finally:
        stack.sandbox.reset_quotas()


# faults at each stage, then a re-run of that stage ---------------------------------------------

STAGE_FAULTS = {
    # stage: (call to hold until the stage is reached, or None; call that fails)
    "network": (None, ("ec2", "CreateVpc")),
    "eks": (None, ("eks", "CreateCluster")),
    "activate": (("iam", "CreateOpenIDConnectProvider"), ("eks", "DescribeCluster")),
    "dependencies": (None, ("eks", "CreateAddon")),
    "hyperpod": (None, ("sagemaker", "CreateCluster")),
    "storage": (("sagemaker", "CreateCluster"), ("s3", "CreateBucket")),
}
CREATIONS = ("ec2:CreateVpc", "ec2:CreateNatGateway", "eks:CreateCluster",
             "eks:CreateAccessEntry", "eks:CreateAddon", "sagemaker:CreateCluster",
             "iam:CreateRole", "s3:CreateBucket", "ec2:CreateSubnet")


@pytest.mark.parametrize("stage", list(STAGE_FAULTS))
def test_fault_at_a_stage_fails_there_and_rerunning_it_recreates_nothing(stack, stage):
    stack.wait_idle()
    name = _name(f"f{stage[:4]}")
    hold_call, (service, action) = STAGE_FAULTS[stage]
    hold = stack.sandbox.hold(*hold_call) if hold_call else None
    try:
        if hold is None:
            stack.sandbox.add_fault(service, action, "error", code="AccessDeniedException",
                                    message="injected: not allowed", status=403)
        with stack.client() as c:
            reply = c.post("/api/v1/clusters", json=_body(name))
        assert reply.status_code == 202, reply.text
        op_id = reply.json()["operation"]["id"]
        if hold is not None:
            stack.sandbox.wait_held(hold, timeout=60)
            stack.sandbox.add_fault(service, action, "error", code="AccessDeniedException",
                                    message="injected: not allowed", status=403)
            stack.sandbox.release(hold)
        failed = stack.wait_operation(op_id, timeout=180)
    finally:
        stack.sandbox.clear_holds()
        stack.sandbox.clear_faults()
    assert failed["status"] == "failed", failed
    failed_step = next(s for s in failed["steps"] if s["name"] == failed["error"]["step"])
    assert failed_step["stage"] == stage
    assert "AccessDenied" in failed["error"]["message"]
    with stack.client("viewer") as c:  # found, even when it failed before EKS existed
        seen = c.get(f"/api/v1/clusters/{name}")
    assert seen.status_code == 200, seen.text
    assert {s["name"]: s["status"] for s in seen.json()["stages"]}[stage] == "failed"
    assert (seen.json()["eks"] is None) == (stage in ("network", "eks"))

    before = stack.sandbox.counters()["by_action"]
    with stack.client() as c:
        rerun = c.post(f"/api/v1/clusters/{name}/stages/{stage}/run")
    assert rerun.status_code == 202, rerun.text
    assert rerun.json()["operation"]["kind"] == "cluster.stage"
    assert {s["stage"] for s in rerun.json()["operation"]["steps"]} == {stage}
    done = stack.wait_operation(rerun.json()["operation"]["id"], timeout=180)
    assert done["status"] == "succeeded", done
    after = stack.sandbox.counters()["by_action"]
    earlier = {s["stage"] for s in failed["steps"] if s["phase"] == "succeeded"}
    made_earlier = {
        "network": ("ec2:CreateVpc", "ec2:CreateNatGateway"),
        "eks": ("eks:CreateCluster", "eks:CreateAccessEntry"),
        "dependencies": ("eks:CreateAddon",),
        "hyperpod": ("sagemaker:CreateCluster",),
    }
    for earlier_stage in earlier - {stage}:
        for creation in made_earlier.get(earlier_stage, ()):
            assert after.get(creation, 0) == before.get(creation, 0), (earlier_stage, creation)
    with stack.client() as c:
        detail = c.get(f"/api/v1/clusters/{name}").json()
    status = {s["name"]: s["status"] for s in detail["stages"]}
    assert status[stage] == "succeeded"


def test_worker_killed_at_the_eks_fault_point_requests_one_cluster(stack):
    stack.wait_idle()
    name = _name("kill")
    since = _last_seq(stack)
    hold = stack.sandbox.hold("eks", "CreateCluster")
    try:
        with stack.client() as c:
            reply = c.post("/api/v1/clusters", json=_body(name))
        op_id = reply.json()["operation"]["id"]
        stack.sandbox.wait_held(hold, timeout=60)
        stack.kill_worker()
        stack.sandbox.release(hold)
        stack.start_worker()
        op = stack.wait_operation(op_id, timeout=180)
    finally:
        stack.sandbox.clear_holds()
        if stack.worker_proc.poll() is not None:
            stack.start_worker()
    assert op["status"] == "succeeded", op
    eks_step = next(s for s in op["steps"] if s["name"] == "eks_cluster")
    assert eks_step["attempts"] >= 2
    creates = [c for c in stack.sandbox.calls(service="eks", action="CreateCluster", since=since)
               if c["params"].get("name") == name]
    assert len([c for c in creates if 200 <= c["status"] < 300]) == 1
    assert len(_client(stack, "eks").list_clusters()["clusters"]) == len(
        set(_client(stack, "eks").list_clusters()["clusters"]))


def test_delete_removes_what_hypd_made_and_nothing_else(stack, cluster):
    stack.wait_idle()
    name = _name("del")
    created = _create(stack, _body(name))
    assert created["status"] == "succeeded"
    local = stack.kube(name)
    assert local.serves()
    ec2 = _ec2(stack)
    bystander = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    other = cluster[0]
    # a workload using the cluster's storage is live work: refused without force
    notebook = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "notebook", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "lab"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "hypd-s3"}}]},
        "status": {"phase": "Running"}}
    local.create_pod(notebook)
    with stack.client() as c:
        vpc_id = c.get(f"/api/v1/networks/{name}").json()["vpc_id"]
        # EKS and HyperPod hold network interfaces in the VPC: AWS refuses its subnets,
        # security group and the VPC itself until they are gone, and the delete waits them out
        held = {i["Description"] for i in ec2.describe_network_interfaces(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["NetworkInterfaces"]}
        assert f"Amazon EKS {name}" in held
        assert any(d.startswith(f"SageMaker HyperPod cluster {name} ") for d in held)
        refused = c.delete(f"/api/v1/clusters/{name}")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["details"]["dependents"] == [
        {"kind": "pod", "name": "notebook", "namespace": "default", "cluster": None,
         "why": "mounts hypd-s3 (the cluster's storage)", "forceable": True}]
    # one that comes after the request was checked stops the delete at its first step, before
    # anything is deleted (the worker is away while the request is checked and recorded)
    local.delete_object("v1", "Pod", "notebook", "default")
    stack.wait_idle()
    stack.kill_worker()
    try:
        with stack.client() as c:
            raced = c.delete(f"/api/v1/clusters/{name}")
        assert raced.status_code == 202, raced.text
        local.create_pod(notebook)
        before = stack.sandbox.counters()["by_action"]
    finally:
        stack.start_worker()
    stopped = stack.wait_operation(raced.json()["operation"]["id"], timeout=120)
    assert stopped["status"] == "failed", stopped
    assert stopped["error"]["code"] == "in_use" and stopped["error"]["step"] == "in_use"
    assert "pod default/notebook" in stopped["error"]["message"]
    assert [s["phase"] for s in stopped["steps"][1:]] == ["pending"] * (len(stopped["steps"]) - 1)
    assert stack.sandbox.counters()["by_action"] == before  # nothing was deleted
    assert local.serves()
    with stack.client() as c:
        reply = c.delete(f"/api/v1/clusters/{name}", params={"force": "true"})
        assert reply.status_code == 202, reply.text
        done = stack.wait_operation(reply.json()["operation"]["id"], timeout=180)
        assert done["status"] == "succeeded", done
        # a deleted cluster is gone everywhere a cluster is looked up ...
        gone = c.get(f"/api/v1/clusters/{name}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
        assert name not in {i["name"] for i in c.get("/api/v1/clusters").json()["items"]}
        for path in (f"/api/v1/clusters/{name}/kubeconfig", f"/api/v1/clusters/{name}/storage"):
            assert c.get(path).status_code == 404, path
        assert c.post(f"/api/v1/clusters/{name}/stages/eks/run").status_code == 404
        assert c.put("/api/v1/active-cluster", json={"name": name}).status_code == 404
        assert c.delete(f"/api/v1/clusters/{name}").status_code == 404
        # ... and its operations stay readable
        listed = c.get("/api/v1/operations", params={"target": f"cluster/{name}"}).json()
        assert [(o["id"], o["kind"], o["status"]) for o in listed["items"]] == [
            (done["id"], "cluster.delete", "succeeded"),
            (stopped["id"], "cluster.delete", "failed"),
            (created["id"], "cluster.create", "succeeded")]
        assert c.get(f"/api/v1/networks/{name}").status_code == 404
        assert c.get(f"/api/v1/clusters/{other}").json()["eks"]["status"] == "ACTIVE"
    eks = _client(stack, "eks")
    assert name not in eks.list_clusters()["clusters"]
    assert other in eks.list_clusters()["clusters"]
    sm = _client(stack, "sagemaker")
    hp_names = [s["ClusterName"] for s in sm.list_clusters()["ClusterSummaries"]]
    assert name not in hp_names and other in hp_names
    assert not ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Vpcs"]
    assert ec2.describe_vpcs(VpcIds=[bystander])["Vpcs"]
    iam = _client(stack, "iam")
    roles = [r["RoleName"] for r in iam.list_roles()["Roles"]]
    assert not [r for r in roles if r.startswith(f"hypd-{name}-")]
    assert [r for r in roles if r.startswith(f"hypd-{other}-")]
    tagged = ec2.describe_subnets(Filters=[{"Name": "tag:hypd:cluster", "Values": [name]}])
    assert tagged["Subnets"] == []
    assert not local.serves()  # its local Kubernetes went with it


def test_imported_cluster_is_listed_and_deleting_it_leaves_aws_untouched(stack, cluster):
    stack.wait_idle()
    name = _name("imp")
    eks = _client(stack, "eks")
    network = cluster[1]["steps"]
    subnets = next(s for s in network if s["name"] == "subnets")["resources"]
    iam = _client(stack, "iam")
    role = iam.create_role(RoleName=f"outside-{name}", AssumeRolePolicyDocument="{}")["Role"]
    eks.create_cluster(name=name, roleArn=role["Arn"],
                       resourcesVpcConfig={"subnetIds": subnets["private_subnet_ids"]})
    before = stack.sandbox.counters()["by_action"]
    with stack.client() as c:
        reply = c.post("/api/v1/clusters/import", json={"name": name})
        assert reply.status_code == 201, reply.text
        assert reply.json()["imported"] is True
        listed = {i["name"]: i for i in c.get("/api/v1/clusters").json()["items"]}
        assert listed[name]["imported"] is True
        gone = c.delete(f"/api/v1/clusters/{name}")
        assert gone.status_code == 200 and gone.json()["imported"] is True
        assert name not in {i["name"] for i in c.get("/api/v1/clusters").json()["items"]}
    assert name in eks.list_clusters()["clusters"]
    after = stack.sandbox.counters()["by_action"]
    mutations = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert mutations == {}
