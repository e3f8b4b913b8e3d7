"""Storage through REST on the full stack (sandbox AWS + local Kubernetes): S3 items (new and
existing buckets), FSx for Lustre items, the create's FSx, removal refused while a running pod
mounts the claim, and the cluster delete taking its file systems along."""

from __future__ import annotations

import uuid

import pytest
from botocore.exceptions import ClientError

from tests.app.test_clusters_api import _body, _client, _create, _last_seq, _name


def _post(stack, cluster: str, body: dict):
    with stack.client() as c:
        return c.post(f"/api/v1/clusters/{cluster}/storage", json=body)


def _add(stack, cluster: str, body: dict) -> dict:
    reply = _post(stack, cluster, body)
    assert reply.status_code == 202, reply.text
    return stack.wait_operation(reply.json()["operation"]["id"], timeout=120)


def _remove(stack, cluster: str, name: str):
    with stack.client() as c:
        return c.delete(f"/api/v1/clusters/{cluster}/storage/{name}")


def _get(stack, cluster: str, name: str | None = None):
    path = f"/api/v1/clusters/{cluster}/storage" + (f"/{name}" if name else "")
    with stack.client("viewer") as c:
        return c.get(path)


def _creations(stack, action: str, since: int) -> list[dict]:
    return [c for c in stack.sandbox.calls(service="fsx", action=action, since=since)
            if 200 <= c["status"] < 300]


@pytest.fixture(scope="module")
def cluster(stack):
    """One cluster made through REST with an FSx file system in its storage stage."""
    stack.wait_idle()
    name = _name("sto")
    since = _last_seq(stack)
    op = _create(stack, _body(name, fsx={"storage_capacity_gib": 1200}))
    assert op["status"] == "succeeded", op
    return {"name": name, "op": op, "since": since, "kube": stack.kube(name)}


def test_a_create_with_fsx_runs_the_fsx_step_in_the_storage_stage(stack, cluster):
    steps = {s["name"]: s for s in cluster["op"]["steps"]}
    assert [s["name"] for s in cluster["op"]["steps"] if s["stage"] == "storage"] == [
        "s3_bucket", "s3_volume", "fsx", "fsx_volume"]
    assert all(steps[n]["phase"] == "succeeded" for n in ("fsx", "fsx_volume"))
    file_system_id = steps["fsx"]["resources"]["file_system_id"]
    creates = [c for c in _creations(stack, "CreateFileSystem", cluster["since"])
               if {"Key": "hypd:cluster", "Value": cluster["name"]} in c["params"]["Tags"]]
    assert len(creates) == 1
    request = creates[0]["params"]
    # beside the instances, in the nodes' security group
    assert request["SubnetIds"] == [steps["compute_subnet"]["resources"]["subnet_id"]]
    assert request["SecurityGroupIds"] == [
        steps["security_group"]["resources"]["security_group_id"]]
    volume = cluster["kube"].get_object("v1", "PersistentVolume", "hypd-default-hypd-fsx")
    assert volume["spec"]["csi"]["volumeHandle"] == file_system_id
    assert cluster["kube"].get_object("v1", "PersistentVolumeClaim", "hypd-fsx", "default")
    # no pod could mount it without the FSx CSI driver: installed with the volume, once
    assert "aws-fsx-csi-driver" in stack.aws("eks").list_addons(
        clusterName=cluster["name"])["addons"]
    assert [a["name"] for a in steps["fsx_volume"]["resources"]["driver"]] == [
        "aws-fsx-csi-driver"]
    listed = {i["name"]: i for i in _get(stack, cluster["name"]).json()["items"]}
    assert listed["hypd-fsx"]["state"] == "available"
    assert listed["hypd-fsx"]["fsx"]["lifecycle"] == "AVAILABLE"
    assert listed["hypd-s3"]["kind"] == "s3" and listed["hypd-s3"]["state"] == "available"
    assert listed["hypd-s3"]["deletes_data"] is False  # the shared bucket stays


def test_an_s3_item_is_a_new_bucket_mounted_as_pv_and_pvc(stack, cluster):
    name = cluster["name"]
    op = _add(stack, name, {"name": "data", "kind": "s3"})
    assert op["status"] == "succeeded", op
    assert op["kind"] == "storage.create" and op["target"] == f"cluster/{name}/storage/data"
    assert [s["name"] for s in op["steps"]] == ["s3_bucket", "s3_volume"]
    bucket = op["steps"][0]["resources"]["bucket"]
    claim = cluster["kube"].get_object("v1", "PersistentVolumeClaim", "data", "default")
    assert claim["metadata"]["labels"]["hypd.io/storage"] == "data"
    volume = cluster["kube"].get_object("v1", "PersistentVolume", "hypd-default-data")
    assert volume["spec"]["csi"]["volumeAttributes"]["bucketName"] == bucket
    tags = {t["Key"]: t["Value"] for t in
            _client(stack, "s3").get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert tags["hypd:cluster"] == name and tags["hypd:storage"] == "data"
    item = _get(stack, name, "data").json()
    assert item["state"] == "available" and item["mounted"] is True
    assert item["s3"] == {"bucket": bucket, "prefix": None, "read_only": False,
                          "exists": True, "made_by_hypd": True}
    assert item["deletes_data"] is True and item["users"] == []


def test_an_fsx_item_is_created_once_with_its_pv_and_pvc(stack, cluster):
    name = cluster["name"]
    since = _last_seq(stack)
    op = _add(stack, name, {"name": "scratch", "kind": "fsx",
                            "fsx": {"storage_capacity_gib": 2400}})
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["fsx", "fsx_volume"]
    creates = _creations(stack, "CreateFileSystem", since)
    assert len(creates) == 1
    assert creates[0]["params"]["StorageCapacity"] == 2400
    assert creates[0]["params"]["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"
    file_system_id = op["steps"][0]["resources"]["file_system_id"]
    volume = cluster["kube"].get_object("v1", "PersistentVolume", "hypd-default-scratch")
    attributes = volume["spec"]["csi"]["volumeAttributes"]
    assert volume["spec"]["csi"]["volumeHandle"] == file_system_id
    assert attributes["dnsname"].startswith(file_system_id) and attributes["mountname"]
    assert cluster["kube"].get_object("v1", "PersistentVolumeClaim", "scratch", "default")
    item = _get(stack, name, "scratch").json()
    assert item["fsx"]["lifecycle"] == "AVAILABLE" and item["fsx"]["capacity_gib"] == 2400
    assert item["fsx"]["made_by_hypd"] is True and item["deletes_data"] is True


def test_removal_is_refused_while_a_running_pod_mounts_the_claim(stack, cluster):
    name, local = cluster["name"], cluster["kube"]
    assert _add(stack, name, {"name": "in-use", "kind": "s3"})["status"] == "succeeded"
    pod = f"train-{uuid.uuid4().hex[:4]}"
    local.create_pod({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod, "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "trainer",
                                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "in-use"}}]},
        "status": {"phase": "Running"},
    })
    try:
        assert _get(stack, name, "in-use").json()["users"] == [f"pod/default/{pod}"]
        refused = _remove(stack, name, "in-use")
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "in_use"
        assert f"pod default/{pod} (mounts claim in-use)" in error["message"]
        assert error["details"]["dependents"] == [
            {"kind": "pod", "name": pod, "namespace": "default", "cluster": None,
             "why": "mounts claim in-use", "forceable": False}]
        assert error["details"]["force_allowed"] is False  # no force for storage
        with stack.client("viewer") as c:
            plan = c.delete(f"/api/v1/clusters/{name}/storage/in-use",
                            params={"dry_run": "true"}).json()
        assert plan["refused"] is True and plan["dependents"] == error["details"]["dependents"]
        assert plan["removes"][:2] == ["claim default/in-use", "volume hypd-default-in-use"]
        assert plan["removes"][2].endswith("and everything in it")
        assert local.get_object("v1", "PersistentVolumeClaim", "in-use", "default")
    finally:
        local.delete_object("v1", "Pod", pod, "default")
    bucket = _get(stack, name, "in-use").json()["s3"]["bucket"]
    reply = _remove(stack, name, "in-use")
    assert reply.status_code == 202, reply.text
    assert reply.json()["operation"]["kind"] == "storage.delete"
    done = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    assert done["status"] == "succeeded", done
    assert local.get_object("v1", "PersistentVolumeClaim", "in-use", "default") is None
    assert local.get_object("v1", "PersistentVolume", "hypd-default-in-use") is None
    with pytest.raises(ClientError):  # hypd made it for this item: it goes too
        _client(stack, "s3").head_bucket(Bucket=bucket)
    assert _get(stack, name, "in-use").status_code == 404


def test_an_existing_bucket_is_mounted_and_never_deleted(stack, cluster):
    name = cluster["name"]
    s3 = _client(stack, "s3")
    bucket = f"user-datasets-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    since = _last_seq(stack)
    op = _add(stack, name, {"name": "datasets", "kind": "s3",
                            "s3": {"bucket": bucket, "prefix": "imagenet", "read_only": True}})
    assert op["status"] == "succeeded", op
    volume = cluster["kube"].get_object("v1", "PersistentVolume", "hypd-default-datasets")
    assert volume["spec"]["csi"]["volumeAttributes"]["bucketName"] == bucket
    assert "prefix imagenet/" in volume["spec"]["mountOptions"]
    assert "read-only" in volume["spec"]["mountOptions"]
    touched = [c for c in stack.sandbox.calls(service="s3", since=since)
               if c["params"].get("Bucket") == bucket and not c["action"].startswith(
                   ("Head", "Get", "List"))]
    assert touched == []  # hypd did not tag, encrypt or block the user's bucket
    item = _get(stack, name, "datasets").json()
    assert item["s3"]["made_by_hypd"] is False and item["deletes_data"] is False
    reply = _remove(stack, name, "datasets")
    assert reply.status_code == 202, reply.text
    done = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    assert done["status"] == "succeeded", done
    assert next(s for s in done["steps"] if s["name"] == "s3_bucket")["resources"]["kept"]
    s3.head_bucket(Bucket=bucket)  # still there
    assert cluster["kube"].get_object("v1", "PersistentVolume", "hypd-default-datasets") is None


def test_removing_an_fsx_item_deletes_its_file_system(stack, cluster):
    name = cluster["name"]
    _add(stack, name, {"name": "old-scratch", "kind": "fsx",
                       "fsx": {"storage_capacity_gib": 1200}})
    file_system_id = _get(stack, name, "old-scratch").json()["fsx"]["file_system_id"]
    since = _last_seq(stack)
    reply = _remove(stack, name, "old-scratch")
    assert reply.status_code == 202, reply.text
    done = stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
    assert done["status"] == "succeeded", done
    deletes = _creations(stack, "DeleteFileSystem", since)
    assert [d["params"]["FileSystemId"] for d in deletes] == [file_system_id]
    with pytest.raises(ClientError) as gone:
        _client(stack, "fsx").describe_file_systems(FileSystemIds=[file_system_id])
    assert gone.value.response["Error"]["Code"] == "FileSystemNotFound"
    assert cluster["kube"].get_object("v1", "PersistentVolumeClaim", "old-scratch",
                                      "default") is None


def test_bad_requests_answer_422_404_and_409(stack, cluster):
    name = cluster["name"]
    for body, field in (
            ({"name": "Bad_Name", "kind": "s3"}, "name"),
            ({"name": "x1", "kind": "ebs"}, "kind"),
            ({"name": "x2", "kind": "s3", "fsx": {"storage_capacity_gib": 1200}}, "fsx"),
            ({"name": "x3", "kind": "fsx", "fsx": {"storage_capacity_gib": 1800}}, "fsx"),
            ({"name": "x4", "kind": "s3", "s3": {"bucket": f"no-such-{uuid.uuid4().hex[:8]}"}},
             "s3.bucket"),
            ({"name": "x5", "kind": "s3", "namespace": "nowhere"}, "namespace")):
        reply = _post(stack, name, body)
        assert reply.status_code == 422, (body, reply.text)
        assert reply.json()["error"]["code"] == "validation_failed"
        assert field in reply.json()["error"]["details"]["fields"], reply.text
    assert _post(stack, "no-such-cluster", {"name": "d", "kind": "s3"}).status_code == 404
    assert _get(stack, "no-such-cluster").status_code == 404
    assert _get(stack, name, "nothing-here").status_code == 404
    missing = _remove(stack, name, "nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    taken = _post(stack, name, {"name": "hypd-s3", "kind": "s3"})
    assert taken.status_code == 409 and "already exists" in taken.json()["error"]["message"]
    with stack.client("viewer") as c:
        assert c.post(f"/api/v1/clusters/{name}/storage",
                      json={"name": "v", "kind": "s3"}).status_code == 403


@pytest.mark.asyncio
async def test_an_agent_adds_lists_and_removes_storage_through_mcp(stack, cluster):
    from mcp import Client

    from mcp_server.server import build_server

    name = cluster["name"]

    async def follow(reply: dict) -> dict:
        assert reply["status_tool"] == "wait_operation", reply
        while True:
            result = await client.call_tool("wait_operation",
                                            {**reply["status_args"], "timeout_seconds": 30})
            assert not result.is_error, result.content[0].text
            if result.structured_content["terminal"]:
                return result.structured_content

    async with Client(build_server(stack.url, stack.operator_token)) as client:
        added = await client.call_tool("add_storage", {"cluster": name, "name": "agent-data",
                                                       "kind": "s3"})
        assert not added.is_error, added.content[0].text
        assert (await follow(added.structured_content))["operation"]["status"] == "succeeded"
        listed = await client.call_tool("list_storage", {"cluster": name})
        assert "agent-data" in {i["name"] for i in listed.structured_content["items"]}
        got = await client.call_tool("get_storage", {"cluster": name, "name": "agent-data"})
        assert not got.is_error, got.content[0].text  # within its output schema (the SDK's check)
        assert got.structured_content["name"] == "agent-data"
        removed = await client.call_tool("remove_storage", {"cluster": name,
                                                            "name": "agent-data"})
        assert not removed.is_error, removed.content[0].text
        assert (await follow(removed.structured_content))["operation"]["status"] == "succeeded"
        missing = await client.call_tool("get_storage", {"cluster": name, "name": "agent-data"})
        assert missing.is_error and missing.content[0].text.startswith("not_found:")


def test_deleting_the_cluster_deletes_its_file_systems_and_only_hypds_buckets(stack, cluster):
    """Last in this module: the cluster goes, asked to delete its data too (and its MLflow
tracking server, which keeps its artifacts in the bucket)."""
    name = cluster["name"]
    s3 = _client(stack, "s3")
    theirs = f"user-results-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=theirs, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    ours = _add(stack, name, {"name": "results", "kind": "s3"})
    assert _add(stack, name, {"name": "theirs", "kind": "s3",
                              "s3": {"bucket": theirs}})["status"] == "succeeded"
    our_bucket = ours["steps"][0]["resources"]["bucket"]
    file_systems = sorted(i["fsx"]["file_system_id"] for i in _get(stack, name).json()["items"]
                          if i["kind"] == "fsx")  # the create's hypd-fsx, and any added since
    with stack.client() as c:  # and hypd's MLflow tracking server, whose artifacts are there
        made = c.put(f"/api/v1/clusters/{name}/mlflow", json={})
    assert made.status_code == 202, made.text
    assert stack.wait_operation(made.json()["operation"]["id"])["status"] == "succeeded"
    stack.wait_idle()
    with stack.client() as c:
        reply = c.delete(f"/api/v1/clusters/{name}", params={"delete_data": "true"})
    assert reply.status_code == 202, reply.text
    done = stack.wait_operation(reply.json()["operation"]["id"], timeout=180)
    assert done["status"] == "succeeded", done
    fsx_step = next(s for s in done["steps"] if s["name"] == "fsx")
    assert sorted(fsx_step["resources"]["file_system_ids"]) == file_systems
    left = [f for f in _client(stack, "fsx").describe_file_systems()["FileSystems"]
            if {"Key": "hypd:cluster", "Value": name} in f.get("Tags", [])]
    assert left == []
    mlflow_step = next(s for s in done["steps"] if s["name"] == "mlflow")
    assert mlflow_step["resources"]["deleted"] is True
    with pytest.raises(ClientError) as gone:
        _client(stack, "sagemaker").describe_mlflow_tracking_server(
            TrackingServerName=f"hypd-{name}")
    assert gone.value.response["Error"]["Code"] == "ResourceNotFound"
    buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    assert our_bucket not in buckets
    assert theirs in buckets
