"""The user's own tools against a cluster hypd made: the real AWS CLI (the pinned `awscli`)
and `kubectl`, with the kubeconfig file the API hands out, signing in through the
kubeconfig's exec plugin `aws eks get-token` — as a new user would try them.

Only real clients talk to the stack here: the REST API over HTTP, boto3, the `aws` and
`kubectl` processes (environment: the sandbox's endpoint and fake credentials, nothing
else), and the kubernetes client loading the same kubeconfig file for the detailed checks.
Every `aws` or `kubectl` run starts a Python `aws eks get-token` (seconds on a busy
machine), so the checks ask each tool only what a user would, and batch kinds in one
`kubectl get`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.stack import REPO, wait_until

ZONE = "us-west-2a"
TYPE = "ml.g5.8xlarge"  # 1 GPU, 1 EFA interface per node
BIN = Path(sys.executable).parent  # the venv: its `aws` is the pinned awscli
VIEW_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"


def _tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.fail(f"{name} is not installed: run the tests with ./dev.sh test, which "
                    "installs it")
    return found


@dataclass
class Tools:
    cluster: str
    hyperpod: str
    env: dict[str, str]
    kubeconfig: Path
    api: k8s.ApiClient

    def run(self, *args: str, check: bool = True, env: dict[str, str | None] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a tool; `env` adds to the user's environment (None removes a variable)."""
        merged = {k: v for k, v in {**self.env, **(env or {})}.items() if v is not None}
        done = subprocess.run(list(args), env=merged, cwd=REPO, capture_output=True,
                              text=True, timeout=timeout)
        if check:
            assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout}\n{done.stderr}"
        return done

    def aws(self, *args: str) -> Any:
        return json.loads(self.run(_tool("aws"), *args, "--output", "json").stdout)

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.run(_tool("kubectl"), "--kubeconfig", str(self.kubeconfig), *args, **kw)

    def boto3(self, service: str, **credentials: str) -> Any:
        keys = {"aws_access_key_id": self.env["AWS_ACCESS_KEY_ID"],
                "aws_secret_access_key": self.env["AWS_SECRET_ACCESS_KEY"],
                "aws_session_token": self.env.get("AWS_SESSION_TOKEN"), **credentials}
        return boto3.client(service, region_name=self.env["AWS_DEFAULT_REGION"],
                            endpoint_url=self.env["AWS_ENDPOINT_URL"], **keys)


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """kubectl's printed tables (one per kind, blank lines between): each header's column
    names and each row's cells (columns are two or more spaces apart)."""
    out = []
    for block in text.strip().split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        rows = [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in lines]
        out.append((rows[0], rows[1:]))
    return out


@pytest.fixture(scope="module")
def tools(stack, tmp_path_factory) -> Tools:
    """One cluster made through the REST API, and the environment a user's shell has."""
    name = f"tools-{uuid.uuid4().hex[:5]}"
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json={
            "name": name, "availability_zone": ZONE, "instance_type": TYPE,
            "instance_count": 2})
        assert reply.status_code == 202, reply.text
        op = stack.wait_operation(reply.json()["operation"]["id"], timeout=180)
        assert op["status"] == "succeeded", op

        def two_ready_nodes() -> dict[str, Any] | None:
            detail = c.get(f"/api/v1/clusters/{name}").json()
            by_health = detail["nodes"]["by_health"] or {}
            return detail if by_health.get("Schedulable") == 2 else None

        detail = wait_until(two_ready_nodes, 60, interval=0.2, what="two Schedulable nodes")
        config = c.get(f"/api/v1/clusters/{name}/kubeconfig", params={"format": "yaml"})
        assert config.status_code == 200, config.text
    home = tmp_path_factory.mktemp("user-home")
    kubeconfig = home / "kubeconfig.yaml"
    kubeconfig.write_text(config.text)
    env = {
        "PATH": f"{BIN}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        **{k: v for k, v in stack.env.items() if k.startswith("AWS_")},
    }
    # the kubernetes client runs the same exec plugin, in the user's environment
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("AWS_")]:
            mp.delenv(key)
        for key, value in env.items():
            mp.setenv(key, value)
        api = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    return Tools(name, detail["hyperpod"]["name"], env, kubeconfig, api)


def test_aws_cli_describes_the_clusters_and_their_addons(tools: Tools) -> None:
    hyperpod = tools.aws("sagemaker", "describe-cluster", "--cluster-name", tools.hyperpod)
    assert hyperpod["ClusterStatus"] == "InService"
    assert hyperpod["Orchestrator"]["Eks"]["ClusterArn"].endswith(f"cluster/{tools.cluster}")
    assert hyperpod["InstanceGroups"][0]["InstanceType"] == TYPE
    assert hyperpod["InstanceGroups"][0]["CurrentCount"] == 2
    addon = tools.aws("eks", "describe-addon", "--cluster-name", tools.cluster,
                      "--addon-name", "aws-mountpoint-s3-csi-driver")["addon"]
    assert addon["status"] == "ACTIVE" and addon["addonVersion"]
    assert addon["clusterName"] == tools.cluster
    # what EKS, HyperPod and the NAT gateway hold in the cluster's VPC, as AWS lists it
    subnets = hyperpod["VpcConfig"]["Subnets"]
    vpc = tools.aws("ec2", "describe-subnets", "--subnet-ids", *subnets)["Subnets"][0]["VpcId"]
    held = tools.aws("ec2", "describe-network-interfaces", "--filters",
                     f"Name=vpc-id,Values={vpc}")["NetworkInterfaces"]
    kinds = sorted((i["InterfaceType"], i["Description"].split(" i-")[0].split(" nat-")[0])
                   for i in held)
    assert kinds == [("efa", f"SageMaker HyperPod cluster {tools.hyperpod} instance")] * 2 + [
        ("interface", f"Amazon EKS {tools.cluster}")] * 2 + [
        ("nat_gateway", "Interface for NAT Gateway")], kinds
    assert all(i["RequesterManaged"] and i["Status"] == "in-use" for i in held)


def test_kubectl_get_nodes_prints_the_servers_columns(tools: Tools) -> None:
    config = yaml.safe_load(tools.kubeconfig.read_text())  # the route's file, as it came
    assert config["users"][0]["user"]["exec"]["args"][2:4] == ["eks", "get-token"]
    ((header, rows),) = tables(tools.kubectl("get", "nodes").stdout)
    assert header == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert len(rows) == 2
    for name, status, roles, _age, version in rows:
        assert name.startswith("hyperpod-i-") and status == "Ready" and roles == "<none>"
        assert version.startswith("v1.")


def test_kubectl_auth_can_i_answers_from_the_access_policies(tools: Tools) -> None:
    assert tools.kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    # a second user, given only the view policy through the EKS API
    iam, eks = tools.boto3("iam"), tools.boto3("eks")
    user = f"viewer-{uuid.uuid4().hex[:5]}"
    arn = iam.create_user(UserName=user)["User"]["Arn"]
    key = iam.create_access_key(UserName=user)["AccessKey"]
    eks.create_access_entry(clusterName=tools.cluster, principalArn=arn)
    eks.associate_access_policy(clusterName=tools.cluster, principalArn=arn,
                                policyArn=VIEW_POLICY, accessScope={"type": "cluster"})
    viewer: dict[str, str | None] = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                                     "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                                     "AWS_SESSION_TOKEN": None}
    no = tools.kubectl("auth", "can-i", "create", "pods", check=False, env=viewer)
    assert (no.returncode, no.stdout.strip()) == (1, "no"), no.stderr
    yes = tools.kubectl("auth", "can-i", "list", "pods", "-n", "kube-system", env=viewer)
    assert yes.stdout.strip() == "yes"


def _pod(tools: Tools, name: str) -> dict[str, Any]:
    return tools.api.sanitize_for_serialization(
        k8s.CoreV1Api(tools.api).read_namespaced_pod(name, "default"))


def test_kubectl_run_wait_and_logs(tools: Tools) -> None:
    tools.kubectl("run", "hello", "--image=busybox", "--",
                  "sh", "-c", "echo hello from hypd; sleep infinity")
    tools.kubectl("wait", "--for=condition=Ready", "pod/hello", "--timeout=60s")
    assert tools.kubectl("logs", "hello").stdout == "hello from hypd\n"
    pod = _pod(tools, "hello")
    assert pod["spec"]["nodeName"].startswith("hyperpod-i-")
    assert pod["status"]["phase"] == "Running" and pod["status"]["podIP"]
    conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
        assert conditions[kind] == "True", conditions
    container = pod["status"]["containerStatuses"][0]
    assert container["ready"] and container["started"] and container["restartCount"] == 0
    assert container["state"]["running"]["startedAt"]

    # a command that finishes: Succeeded, its output kept
    tools.kubectl("run", "once", "--image=busybox", "--restart=Never", "--",
                  "echo", "done", "in", "one")
    tools.kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/once",
                  "--timeout=60s")
    assert tools.kubectl("logs", "once").stdout == "done in one\n"
    terminated = _pod(tools, "once")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    ((header, rows),) = tables(tools.kubectl("get", "pods").stdout)
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    shown = {row[0]: row[1:4] for row in rows}
    assert shown["hello"] == ["1/1", "Running", "0"], shown
    assert shown["once"] == ["0/1", "Completed", "0"], shown

    # more GPUs than a node has: Pending, and the scheduler says why
    overrides = {"spec": {"containers": [{"name": "big", "image": "busybox",
                                          "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}
    tools.kubectl("run", "big", "--image=busybox", f"--overrides={json.dumps(overrides)}")
    core = k8s.CoreV1Api(tools.api)

    def failed_scheduling() -> list[Any]:
        return core.list_namespaced_event(
            "default", field_selector="involvedObject.name=big,reason=FailedScheduling").items

    (event,) = wait_until(failed_scheduling, 30, what="a FailedScheduling event")
    assert event.message.startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    assert _pod(tools, "big")["status"]["phase"] == "Pending"
    for name in ("big", "hello", "once"):
        core.delete_namespaced_pod(name, "default")


def test_kubectl_gets_every_kind_hypd_creates(tools: Tools) -> None:
    """Namespaces, the storage stage's claim and volume (bound), every kind of object the
    dependencies stage applies (the base set's manifests in cloud/manifests, each object
    there by name) or its add-ons install, and the custom resources of every CRD they bring.
    Manifests a feature or workload installs when first needed are not the stage's."""
    from cloud import dependencies

    files = [REPO / "cloud" / "manifests" / name for dep in dependencies.desired()
             if dep.kind == dependencies.MANIFESTS for name in dep.manifests]
    manifests = [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc]
    applied = tools.kubectl("get", *[a for path in files for a in ("-f", str(path))],
                            "-o", "name")
    assert len(applied.stdout.split()) == len(manifests)
    cluster_wide = {
        "namespaces": ["NAME", "STATUS", "AGE"],
        "persistentvolumes": ["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS",
                              "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON",
                              "AGE"],
        "clusterroles": ["NAME", "CREATED AT"],
        "clusterrolebindings": ["NAME", "ROLE", "AGE"],
        "csidrivers": ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY",
                       "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE"],
        "customresourcedefinitions": ["NAME", "CREATED AT"],
    }
    namespaced = {
        "persistentvolumeclaims": ["NAMESPACE", "NAME", "STATUS", "VOLUME", "CAPACITY",
                                   "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS",
                                   "AGE"],
        "serviceaccounts": ["NAMESPACE", "NAME", "SECRETS", "AGE"],
        "daemonsets": ["NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE",
                       "AVAILABLE", "NODE SELECTOR", "AGE"],
        "deployments": ["NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
    }
    kinds = {doc["kind"].lower() + "s" for doc in manifests}
    assert kinds <= {*cluster_wide, *namespaced}, kinds  # a new kind needs its header here
    by_kind = {}
    for expected, scope in ((cluster_wide, ()), (namespaced, ("-A",))):
        printed = tables(tools.kubectl("get", ",".join(expected), *scope).stdout)
        assert [header for header, _ in printed] == list(expected.values()), printed
        by_kind.update({kind: rows for kind, (_, rows) in zip(expected, printed, strict=True)})
    assert all(by_kind.values()), by_kind

    names = {row[0] for row in by_kind["namespaces"]}
    assert {"namespace/default", "namespace/kube-system", "namespace/aws-hyperpod"} <= names
    assert {row[1] for row in by_kind["namespaces"]} == {"Active"}
    claim = next(r for r in by_kind["persistentvolumeclaims"]
                 if r[1] == "persistentvolumeclaim/hypd-s3")
    assert claim[0] == "default" and claim[2] == "Bound" and claim[5] == "RWX", claim
    volume = next(r for r in by_kind["persistentvolumes"]
                  if r[0] == f"persistentvolume/{claim[3]}")
    assert volume[2:6] == ["RWX", "Retain", "Bound", "default/hypd-s3"], volume

    crds = [row[0].split("/", 1)[1] for row in by_kind["customresourcedefinitions"]]
    listed = tools.kubectl("get", ",".join(crds), "-A")  # the add-ons' custom resources
    assert "No resources found" in listed.stdout + listed.stderr
    assert "error" not in listed.stderr.lower(), listed.stderr
