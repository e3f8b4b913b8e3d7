"""Inference endpoints through REST on the full stack: a vLLM Deployment behind its Service
answering a test completion through the Kubernetes API server's service proxy (and nothing
else reachable through it), a model pool whose workers are reassigned by label and scaled in
around their assignments, explicit-diff changes, a managed endpoint (refused while the
inference operator is off; then deployed by the operator to ready and invoked through the
operator's Service), and deletion."""

from __future__ import annotations

import base64
import json

import pytest

from tests.app.dryrunkit import calls_in_order, rehearsed
from tests.app.test_clusters_api import _body, _create, _name

GPU_TYPE = "ml.g5.12xlarge"  # 4 GPUs a node


def _post(stack, cluster: str, path: str, body: dict, token: str = "operator"):
    with stack.client(token) as c:
        return c.post(f"/api/v1/clusters/{cluster}/{path}", json=body)


def _run(stack, reply) -> dict:
    assert reply.status_code == 202, reply.text
    return stack.wait_operation(reply.json()["operation"]["id"], timeout=120)


def _get(stack, cluster: str, name: str | None = None) -> dict:
    path = f"/api/v1/clusters/{cluster}/endpoints" + (f"/{name}" if name else "")
    with stack.client("viewer") as c:
        reply = c.get(path)
    assert reply.status_code == 200, reply.text
    return reply.json()


def _upload_model(stack, cluster: str, model: str) -> None:
    """A model the user put in the cluster's bucket (the download route's job otherwise)."""
    s3 = stack.aws("s3")
    bucket = next(b["Name"] for b in s3.list_buckets()["Buckets"]
                  if b["Name"].startswith(f"hypd-{cluster}-"))
    s3.put_object(Bucket=bucket, Key=f"models/{model}/config.json", Body=b"{}")


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = _name("inf")
    op = _create(stack, _body(name, instance_type=GPU_TYPE, instance_count=2))
    assert op["status"] == "succeeded", op
    for model in ("tiny", "llama", "qwen"):
        _upload_model(stack, name, model)
    return name


def _vllm(name: str, **extra) -> dict:
    return {"name": name, "kind": "vllm", "model": "tiny", "gpus": 1, "replicas": 2,
            "instance_type": GPU_TYPE, **extra}


@pytest.fixture(scope="module")
def served(stack, cluster):
    op = _run(stack, _post(stack, cluster, "endpoints", _vllm("chat")))
    assert op["status"] == "succeeded", op
    return "chat"


def test_a_vllm_endpoint_is_a_deployment_and_service_that_serves(stack, cluster, served):
    kube = stack.kube(cluster)
    deployment = kube.get_object("apps/v1", "Deployment", served, "default")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:3] == ["vllm", "serve", "/s3/models/tiny"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert deployment["status"]["availableReplicas"] == 2
    service = kube.get_object("v1", "Service", served, "default")
    assert service["spec"]["type"] == "ClusterIP"
    view = _get(stack, cluster, served)
    assert (view["state"], view["ready_replicas"], view["services"]) == ("ready", 2, [served])


def test_invoke_reaches_the_endpoints_service_through_the_proxy(stack, cluster, served):
    reply = _post(stack, cluster, f"endpoints/{served}/invoke",
                  {"prompt": "Hello there", "max_tokens": 5})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == 200 and body["service"] == f"default/{served}"
    answer = body["response"]
    assert answer["object"] == "text_completion" and answer["model"] == "tiny"
    assert answer["usage"]["completion_tokens"] == 5
    pods = {p["metadata"]["name"] for p in stack.kube(cluster).list_objects("v1", "Pod",
                                                                            "default")
            if p["metadata"].get("labels", {}).get("hypd.io/endpoint") == served}
    assert answer["system_fingerprint"] in pods  # a pod of this endpoint answered


@pytest.mark.parametrize("body, field", [
    ({"prompt": "x", "path": "/api/v1/secrets"}, "path"),
    ({"prompt": "x", "namespace": "kube-system"}, "namespace"),
    ({"prompt": "x", "service": "kubernetes"}, "service"),
    ({"prompt": "x", "url": "http://169.254.169.254/"}, "url"),
    ({"prompt": "x", "method": "DELETE"}, "method"),
    ({"prompt": "x" * 4001}, "prompt"),
    ({"prompt": "x", "max_tokens": 100000}, "max_tokens"),
    ({"prompt": "x", "model": "../../secrets"}, "model"),
])
def test_invoke_refuses_any_other_target_or_an_unbounded_body(stack, cluster, served, body,
                                                               field):
    reply = _post(stack, cluster, f"endpoints/{served}/invoke", body)
    assert reply.status_code == 422, reply.text
    assert field in reply.json()["error"]["details"]["fields"]


def test_invoke_refuses_another_model_and_an_unknown_endpoint(stack, cluster, served):
    reply = _post(stack, cluster, f"endpoints/{served}/invoke",
                  {"prompt": "x", "model": "llama"})
    assert reply.status_code == 422 and "serves tiny" in reply.text
    reply = _post(stack, cluster, "endpoints/kubernetes/invoke", {"prompt": "x"})
    assert reply.status_code == 404


# -- a model pool ------------------------------------------------------------------------------

POOL_LABEL = "hypd.io/model"


@pytest.fixture(scope="module")
def pool(stack, cluster):
    body = {"name": "pool", "kind": "vllm", "model": "llama", "gpus": 1, "replicas": 3,
            "service": "pool", "pool_models": ["llama", "qwen"], "instance_type": GPU_TYPE}
    op = _run(stack, _post(stack, cluster, "endpoints", body))
    assert op["status"] == "succeeded", op
    return "pool"


def _workers(stack, cluster: str) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in stack.kube(cluster).list_objects(
        "v1", "Pod", "default") if p["metadata"].get("labels", {}).get(
            "hypd.io/endpoint") == "pool"}


def _reassign(stack, cluster: str, worker: str, model: str):
    return _post(stack, cluster, "endpoints/pool/reassign", {"worker": worker, "model": model})


def _assign(stack, cluster: str, worker: str, model: str) -> None:
    """The worker serving `model`, whatever other tests of the module did before."""
    if _workers(stack, cluster)[worker]["metadata"]["labels"][POOL_LABEL] != model:
        assert _run(stack, _reassign(stack, cluster, worker, model))["status"] == "succeeded"


def _free_worker(stack, cluster: str) -> str:
    """An unassigned worker (one made so, if every worker serves a model now)."""
    workers = _workers(stack, cluster)
    free = sorted(n for n, p in workers.items()
                  if p["metadata"]["labels"][POOL_LABEL] == "unassigned")
    if free:
        return free[0]
    name = sorted(workers)[0]
    _assign(stack, cluster, name, "unassigned")
    return name


def test_a_pool_is_warm_unassigned_workers_and_a_binding_service_per_model(stack, cluster,
                                                                          pool):
    kube = stack.kube(cluster)
    deployment = kube.get_object("apps/v1", "Deployment", pool, "default")
    assert POOL_LABEL not in deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["template"]["metadata"]["labels"][POOL_LABEL] == "unassigned"
    workers = _workers(stack, cluster)
    assert len(workers) in (2, 3)  # 2 once the scale-in test has run
    for model in ("llama", "qwen"):
        service = kube.get_object("v1", "Service", f"pool-{model}", "default")
        assert service["spec"]["selector"][POOL_LABEL] == model
    view = _get(stack, cluster, pool)
    assert {w["name"]: w["model"] for w in view["workers"]} == {
        n: p["metadata"]["labels"][POOL_LABEL] for n, p in workers.items()}


def test_reassigning_changes_only_the_workers_label_and_keeps_the_worker(stack, cluster,
                                                                        pool):
    name = _free_worker(stack, cluster)
    for other in _workers(stack, cluster):
        if other != name:
            _assign(stack, cluster, other, "unassigned")  # llama's only worker: this one
    pods_before = set(_workers(stack, cluster))
    before = _workers(stack, cluster)[name]
    op = _run(stack, _reassign(stack, cluster, name, "llama"))
    assert op["status"] == "succeeded", op
    after = _workers(stack, cluster)[name]
    assert after["metadata"]["uid"] == before["metadata"]["uid"]  # not replaced
    assert after["metadata"]["labels"] == {**before["metadata"]["labels"],
                                           POOL_LABEL: "llama"}
    assert after["spec"] == before["spec"]
    assert after["metadata"].get("annotations") == before["metadata"].get("annotations")
    assert after["metadata"]["ownerReferences"] == before["metadata"]["ownerReferences"]
    assert set(_workers(stack, cluster)) == pods_before  # nothing orphaned or added
    # its model's binding Service now reaches it
    reply = _post(stack, cluster, "endpoints/pool/invoke", {"prompt": "hi", "model": "llama"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["response"]["system_fingerprint"] == name
    assert reply.json()["service"] == "default/pool-llama"
    # the other model has no worker yet
    reply = _post(stack, cluster, "endpoints/pool/invoke", {"prompt": "hi", "model": "qwen"})
    assert reply.status_code == 409 and "no server is ready" in reply.text
    # asking again changes nothing
    again = _reassign(stack, cluster, name, "llama")
    assert again.status_code == 200 and again.json()["changed"] is False


def test_a_pool_scale_in_keeps_its_assigned_workers(stack, cluster, pool):
    names = sorted(_workers(stack, cluster))
    assert len(names) == 3  # the only test that scales the pool
    _assign(stack, cluster, names[0], "llama")
    for other in names[1:]:
        _assign(stack, cluster, other, "unassigned")
    assigned = [names[0]]
    uids = {n: _workers(stack, cluster)[n]["metadata"]["uid"] for n in assigned}
    with stack.client() as c:
        reply = c.patch(f"/api/v1/clusters/{cluster}/endpoints/pool", json={"replicas": 2})
    op = _run(stack, reply)
    assert op["status"] == "succeeded", op
    workers = _workers(stack, cluster)
    assert len(workers) == 2
    assert {n: workers[n]["metadata"]["uid"] for n in assigned if n in workers} == uids
    # a second assigned worker: scaling to one would take an assigned one, refused
    other = next(n for n in workers if n not in assigned)
    assert _run(stack, _reassign(stack, cluster, other, "qwen"))["status"] == "succeeded"
    with stack.client() as c:
        reply = c.patch(f"/api/v1/clusters/{cluster}/endpoints/pool", json={"replicas": 1})
    assert reply.status_code == 409 and "assigned" in reply.text
    assert len(_workers(stack, cluster)) == 2


# -- changes and deletion --------------------------------------------------------------------------

def _patch(stack, cluster: str, name: str, body: dict):
    with stack.client() as c:
        return c.patch(f"/api/v1/clusters/{cluster}/endpoints/{name}", json=body)


def test_a_change_already_true_sends_nothing_and_a_new_count_rolls_out(stack, cluster, served):
    same = _patch(stack, cluster, served, {"replicas": 2})
    assert same.status_code == 200 and same.json()["changed"] is False
    refused = _patch(stack, cluster, served, {"routing": "kvaware"})
    assert refused.status_code == 422 and "routing" in refused.json()["error"]["details"][
        "fields"]
    op = _run(stack, _patch(stack, cluster, served, {"replicas": 1}))
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["deploy"]
    deployment = stack.kube(cluster).get_object("apps/v1", "Deployment", served, "default")
    assert deployment["spec"]["replicas"] == 1
    assert _get(stack, cluster, served)["replicas"] == 1


def test_each_endpoint_change_is_planned_first_and_nothing_changes(stack, cluster, served,
                                                                   pool):
    """create, update and reassign answer their operation rehearsed (tests/app/dryrunkit.py
    checks nothing was recorded, sent to AWS or kept by Kubernetes)."""
    base = f"/api/v1/clusters/{cluster}/endpoints"
    plan = rehearsed(stack, "POST", base, _vllm(_name("plan")), kind="endpoint.create")
    assert calls_in_order(plan, [("kubernetes", "Deployment"), ("kubernetes", "Service")]), plan
    assert plan["would_fail"] is None
    replicas = _get(stack, cluster, served)["replicas"]
    plan = rehearsed(stack, "PATCH", f"{base}/{served}", {"replicas": replicas + 1},
                     kind="endpoint.update")
    assert calls_in_order(plan, [("kubernetes", "Deployment")]), plan
    deployment = stack.kube(cluster).get_object("apps/v1", "Deployment", served, "default")
    assert deployment["spec"]["replicas"] == replicas  # the plan kept nothing
    worker = _free_worker(stack, cluster)
    plan = rehearsed(stack, "POST", f"{base}/{pool}/reassign",
                     {"worker": worker, "model": "qwen"}, kind="endpoint.reassign")
    assert plan["changes"] >= 1 and plan["would_fail"] is None, plan
    assert _workers(stack, cluster)[worker]["metadata"]["labels"][POOL_LABEL] == "unassigned"


def test_an_endpoint_larger_than_the_cluster_is_refused_with_the_numbers(stack, cluster,
                                                                          served):
    """Two g5.12xlarge nodes of four GPUs: five servers of two GPUs can never run there,
    nor an autoscaling maximum of nine one-GPU servers, nor a managed endpoint on a type the
    cluster has no group of; nothing is recorded. Scaling an endpoint past it is refused the
    same way, the endpoint left as it was."""
    stack.wait_idle()
    before = stack.sandbox.counters()["by_action"]
    reply = _post(stack, cluster, "endpoints", _vllm("wide", gpus=2, replicas=5))
    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert (error["code"], error["message"]) == ("exceeds_capacity", (
        "replicas: 5 replicas asked, each with 2 GPUs; the cluster can hold at most 4: group "
        "'workers' holds 4, 2 per node (2 nodes of ml.g5.12xlarge with 4 GPUs each; 2 now, "
        "no managed autoscaling)"))
    assert error["details"]["can_hold"] == 4
    assert error["details"]["fields"] == {"replicas": [error["message"]]}
    body = {"name": "elastic", "kind": "sglang", "model": "qwen", "gpus": 1, "replicas": 2,
            "autoscaling": {"min": 1, "max": 9}}
    error = _post(stack, cluster, "endpoints", body).json()["error"]
    assert error["code"] == "exceeds_capacity"
    assert error["message"].startswith("autoscaling.max: 9 replicas at the autoscaling "
                                       "maximum asked, each with 1 GPU; the cluster can hold "
                                       "at most 8")
    managed = {"name": "elsewhere", "kind": "managed", "model": "llama", "gpus": 1,
               "instance_type": "ml.p5.48xlarge"}
    error = _post(stack, cluster, "endpoints", managed).json()["error"]
    assert (error["code"], error["details"]["fields"]) == (
        "validation_failed", {"instance_type": [error["message"]]})
    assert error["message"] == (f"cluster {cluster!r} has no instance group of "
                                "ml.p5.48xlarge; its groups: workers (ml.g5.12xlarge)")
    with stack.client("viewer") as c:
        for name in ("wide", "elastic", "elsewhere"):
            assert c.get(f"/api/v1/clusters/{cluster}/endpoints/{name}").status_code == 404
            assert c.get("/api/v1/operations", params={
                "target": f"cluster/{cluster}/endpoint/{name}"}).json()["items"] == []
    refused = _patch(stack, cluster, served, {"replicas": 9})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["message"].startswith(
        "replicas: 9 replicas asked, each with 1 GPU; the cluster can hold at most 8")
    deployment = stack.kube(cluster).get_object("apps/v1", "Deployment", served, "default")
    assert deployment["spec"]["replicas"] == _get(stack, cluster, served)["replicas"] <= 2
    assert stack.sandbox.counters()["by_action"] == before


def _controlled_by(obj: dict, owner: dict) -> bool:
    return any(r.get("uid") == owner["metadata"]["uid"] and r.get("controller")
               for r in obj["metadata"].get("ownerReferences") or [])


def test_a_managed_endpoint_is_made_served_and_invoked_through_the_inference_operator(
        stack, cluster):
    """The operator (the sandbox plays it as aws/sagemaker-hyperpod-cli reads it: pods
    labelled app=<config>, `status.deploymentStatus.deploymentObjectOverallState`) makes the
    model servers and their Service from the InferenceEndpointConfig; hypd reports the
    endpoint ready from that status and invokes it through the operator's own Service."""
    from tests.app.featurekit import state, toggle
    from tests.crdkit import validate

    body = {"name": "managed", "kind": "managed", "model": "llama", "gpus": 1,
            "instance_type": GPU_TYPE, "routing": "prefixaware", "kv_cache_l2": True,
            "autoscaling": {"min": 1, "max": 2}}
    assert state(stack, cluster, "inference_operator") == "off"
    refused = _post(stack, cluster, "endpoints", body)
    assert refused.status_code == 412, refused.text
    assert "inference_operator" in refused.json()["error"]["message"]
    assert toggle(stack, cluster, {"inference_operator": {"enabled": True}})[
        "status"] == "succeeded"
    # the operator's SageMaker endpoint takes the endpoint's name, unique in the Region: a
    # name held already (here by a plain SageMaker endpoint) is refused before anything
    sm = stack.aws("sagemaker")
    role = "arn:aws:iam::123456789012:role/hypd/anyone"
    sm.create_model(ModelName="taken-model", ExecutionRoleArn=role,
                    PrimaryContainer={"Image": "repo/serve:1"})
    sm.create_endpoint_config(EndpointConfigName="taken-config", ProductionVariants=[
        {"VariantName": "AllTraffic", "ModelName": "taken-model",
         "InstanceType": "ml.g4dn.xlarge", "InitialInstanceCount": 1}])
    held = sm.create_endpoint(EndpointName="taken", EndpointConfigName="taken-config")
    taken = _post(stack, cluster, "endpoints", {**body, "name": "taken"})
    assert taken.status_code == 409, taken.text
    assert taken.json()["error"]["details"] == {"name": "taken",
                                                "sagemaker_endpoint": held["EndpointArn"]}
    assert "taken" not in {e["name"] for e in _get(stack, cluster)["items"]}
    op = _run(stack, _post(stack, cluster, "endpoints", body))
    assert op["status"] == "succeeded", op  # its deploy step waited for the operator
    kube = stack.kube(cluster)
    config = kube.get_object("inference.sagemaker.aws.amazon.com/v1",
                             "InferenceEndpointConfig", "managed", "default")
    # the spec hypd wrote and the status the operator wrote, both the CRD's closed schema
    validate(config, "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml", "v1")
    assert config["spec"]["intelligentRoutingSpec"]["routingStrategy"] == "prefixaware"
    assert config["status"]["state"] == "DeploymentComplete"
    assert config["status"]["deploymentStatus"]["deploymentObjectOverallState"] == \
        "DeploymentComplete"
    deployments = [d for d in kube.list_objects("apps/v1", "Deployment", "default")
                   if _controlled_by(d, config)]
    services = [s for s in kube.list_objects("v1", "Service", "default")
                if _controlled_by(s, config)]
    assert len(deployments) == 1 and len(services) == 1
    pods = [p for p in kube.list_objects("v1", "Pod", "default")
            if p["metadata"].get("labels", {}).get("app") == "managed"]
    assert len(pods) == 1 and pods[0]["status"]["phase"] == "Running"
    node = kube.get_object("v1", "Node", pods[0]["spec"]["nodeName"])
    assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == GPU_TYPE
    # the operator registered the SageMaker endpoint of that name, its execution role hypd's
    # inference role (which SageMaker may assume), and wrote its certificate in the TLS bucket
    registered = sm.describe_endpoint(EndpointName="managed")
    assert config["status"]["endpoints"]["sagemaker"] == {
        "state": "CreationCompleted", "endpointArn": registered["EndpointArn"],
        "configArn": sm.describe_endpoint_config(EndpointConfigName="managed")[
            "EndpointConfigArn"],
        "modelArn": sm.describe_model(ModelName="managed")["ModelArn"]}
    assert sm.describe_endpoint_config(EndpointConfigName="managed")["ProductionVariants"][0][
        "InstanceType"] == GPU_TYPE
    assert sm.describe_model(ModelName="managed")["ExecutionRoleArn"].endswith(
        f"role/hypd/hypd-{cluster}-inference-op")
    assert {"Key": "CreatedBy", "Value": "HyperPodInference"} in sm.list_tags(
        ResourceArn=registered["EndpointArn"])["Tags"]
    certificate = config["status"]["tlsCertificate"]
    assert certificate["tlsCertificateOutputS3Bucket"].startswith("hyperpod-tls-hypd-")
    s3 = stack.aws("s3")
    s3.head_object(Bucket=certificate["tlsCertificateOutputS3Bucket"],
                   Key=certificate["tlsCertificateS3Keys"][0])
    view = _get(stack, cluster, "managed")
    assert (view["state"], view["ready_replicas"], view["services"]) == (
        "ready", 1, [services[0]["metadata"]["name"]])
    assert view["kind"] == "managed" and view["autoscaling"]["max"] == 2
    assert view["sagemaker_endpoint"] == {"arn": registered["EndpointArn"],
                                          "state": "CreationCompleted"}
    # invoke reaches the operator's Service (and so a model server of this endpoint) ...
    invoke = _post(stack, cluster, "endpoints/managed/invoke", {"prompt": "hi", "max_tokens": 3})
    assert invoke.status_code == 200, invoke.text
    answer = invoke.json()
    assert answer["service"] == f"default/{services[0]['metadata']['name']}"
    assert answer["response"]["model"] == "llama"
    assert answer["response"]["system_fingerprint"] == pods[0]["metadata"]["name"]
    # ... and nothing else: other targets, another model
    for other, field in (({"prompt": "x", "service": "kubernetes"}, "service"),
                         ({"prompt": "x", "path": "/api/v1/secrets"}, "path"),
                         ({"prompt": "x", "model": "qwen"}, "model")):
        reply = _post(stack, cluster, "endpoints/managed/invoke", other)
        assert reply.status_code == 422 and field in reply.text, reply.text
    deleted = _run(stack, _delete(stack, cluster, "managed"))
    assert deleted["status"] == "succeeded", deleted
    assert kube.get_object("apps/v1", "Deployment", deployments[0]["metadata"]["name"],
                           "default") is None  # the operator's objects went with the config
    assert kube.get_object("v1", "Service", services[0]["metadata"]["name"], "default") is None
    # ... and so did its SageMaker endpoint and certificate (its finalizer held the config)
    assert "managed" not in {e["EndpointName"] for e in sm.list_endpoints()["Endpoints"]}
    assert "Contents" not in s3.list_objects_v2(
        Bucket=certificate["tlsCertificateOutputS3Bucket"])
    # a role changed by hand so that SageMaker may no longer assume it (the operator's
    # endpoints would fail: "Could not assume role"): the feature reads partial and a
    # managed endpoint is refused before anything is made; turning it on again repairs it
    iam = stack.aws("iam")
    role_name = f"hypd-{cluster}-inference-op"
    trust = iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"]
    iam.update_assume_role_policy(RoleName=role_name, PolicyDocument=json.dumps(
        {**trust, "Statement": [s for s in trust["Statement"]
                                if s.get("Principal", {}).get("Service") is None]}))
    refused = _post(stack, cluster, "endpoints", {**body, "name": "untrusted"})
    assert refused.status_code == 412, refused.text
    assert refused.json()["error"]["details"] == {"feature": "inference_operator",
                                                  "state": "partial"}
    assert toggle(stack, cluster, {"inference_operator": {"enabled": True}})[
        "status"] == "succeeded"
    assert iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"] == trust
    assert state(stack, cluster, "inference_operator") == "on"
    assert toggle(stack, cluster, {"inference_operator": {"enabled": False}})[
        "status"] == "succeeded"


def _delete(stack, cluster: str, name: str):
    with stack.client() as c:
        return c.delete(f"/api/v1/clusters/{cluster}/endpoints/{name}")


def test_deleting_an_endpoint_removes_every_object_it_made(stack, cluster):
    op = _run(stack, _post(stack, cluster, "endpoints", _vllm("gone", replicas=1)))
    assert op["status"] == "succeeded", op
    op = _run(stack, _delete(stack, cluster, "gone"))
    assert op["status"] == "succeeded", op
    kube = stack.kube(cluster)
    assert kube.get_object("apps/v1", "Deployment", "gone", "default") is None
    assert kube.get_object("v1", "Service", "gone", "default") is None
    assert not [p for p in kube.list_objects("v1", "Pod", "default")
                if p["metadata"].get("labels", {}).get("hypd.io/endpoint") == "gone"]
    assert "gone" not in {i["name"] for i in _get(stack, cluster)["items"]}
    assert _delete(stack, cluster, "gone").status_code == 404


# -- external load balancer, SGLang router and KEDA --------------------------------------------

def test_an_external_endpoint_installs_the_load_balancer_controller_and_gets_an_nlb(stack,
                                                                                    cluster):
    op = _run(stack, _post(stack, cluster, "endpoints",
                           _vllm("public", replicas=1, service="load_balancer")))
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["requirements", "deploy", "service"]
    kube = stack.kube(cluster)
    controller = kube.get_object("apps/v1", "Deployment", "aws-load-balancer-controller",
                                 "kube-system")
    args = controller["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--cluster-name={cluster}" in args
    account = kube.get_object("v1", "ServiceAccount", "aws-load-balancer-controller",
                              "kube-system")
    role = account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]
    assert role.endswith(f"role/hypd/hypd-{cluster}-lb-controller")
    service = kube.get_object("v1", "Service", "public", "default")
    assert service["spec"]["type"] == "LoadBalancer"
    view = _get(stack, cluster, "public")
    assert view["address"].endswith(".elb.us-west-2.amazonaws.com")
    # its webhook server's certificate: made by hypd, mounted (the sandbox's kubelet starts
    # no pod whose secret volume's Secret is missing, so the controller ran with it)
    secret = kube.get_object("v1", "Secret", "aws-load-balancer-tls", "kube-system")
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    assert {"name": "cert", "secret": {"secretName": "aws-load-balancer-tls",
                                       "defaultMode": 420}} in \
        controller["spec"]["template"]["spec"]["volumes"]
    # a second install (the webhook Service removed by hand: the manifests are applied again)
    # puts the Service back and keeps the Secret as it was
    assert _run(stack, _delete(stack, cluster, "public"))["status"] == "succeeded"
    kube.delete_object("v1", "Service", "aws-load-balancer-webhook-service", "kube-system")
    again = _run(stack, _post(stack, cluster, "endpoints",
                              _vllm("public", replicas=1, service="load_balancer")))
    assert again["status"] == "succeeded", again
    (applied,) = [a for s in again["steps"] if s["name"] == "requirements"
                  for a in s["resources"]["actions"]]
    assert applied["kept"] == ["Secret/aws-load-balancer-tls"], applied
    assert kube.get_object("v1", "Service", "aws-load-balancer-webhook-service", "kube-system")
    assert kube.get_object("v1", "Secret", "aws-load-balancer-tls", "kube-system") == secret
    key = secret["data"]["tls.key"]
    for where, text in (("operations", json.dumps([op, again])),
                        ("worker log", stack.log("worker")), ("web log", stack.log("web"))):
        assert key not in text and base64.b64decode(key).decode() not in text, where
    assert _run(stack, _delete(stack, cluster, "public"))["status"] == "succeeded"


def test_a_routed_sglang_endpoint_has_the_router_in_front_and_keda_scaling(stack, cluster):
    from tests.crdkit import validate, validate_served

    body = {"name": "big", "kind": "sglang", "model": "qwen", "gpus": 1, "replicas": 2,
            "routing": "cache_aware", "autoscaling": {"min": 1, "max": 2, "target": 4}}
    op = _run(stack, _post(stack, cluster, "endpoints", body))
    assert op["status"] == "succeeded", op
    assert [s["name"] for s in op["steps"]] == ["requirements", "deploy", "service",
                                                "autoscaler"]
    kube = stack.kube(cluster)
    assert kube.get_object("apps/v1", "Deployment", "keda-operator", "keda") is not None
    scaled = kube.get_object("keda.sh/v1alpha1", "ScaledObject", "big", "default")
    validate({k: v for k, v in scaled.items() if k != "status"},
             "keda.sh_scaledobjects.yaml", "v1alpha1")
    # the cluster serves KEDA's own ScaledObject schema (2.17's), and the object fits it
    served = kube.get_object("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                             "scaledobjects.keda.sh")
    assert "triggers" in served["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
        "properties"]["spec"]["properties"]
    validate_served({k: v for k, v in scaled.items() if k != "status"}, served, "v1alpha1")
    # KEDA reads the servers' total load from the reader beside the router, in the cluster
    (trigger,) = scaled["spec"]["triggers"]
    assert (trigger["type"], trigger["metricType"]) == ("metrics-api", "AverageValue")
    assert trigger["metadata"]["url"] == (
        "http://big-router.default.svc.cluster.local:29100/load")
    load = kube.get_object("v1", "Service", "big-router", "default")
    assert load["spec"]["type"] == "ClusterIP"
    assert [p["port"] for p in load["spec"]["ports"]] == [29100]
    router = kube.get_object("apps/v1", "Deployment", "big-router", "default")
    assert router["status"]["availableReplicas"] == 1  # the reader runs beside the router
    assert [c["name"] for c in router["spec"]["template"]["spec"]["containers"]] == [
        "router", "load"]
    assert "sglang_load.py" in kube.get_object("v1", "ConfigMap", "big-router-load",
                                               "default")["data"]
    reply = _post(stack, cluster, "endpoints/big/invoke", {"prompt": "route me"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["response"]["system_fingerprint"].startswith("big-router-")
    to_zero = _patch(stack, cluster, "big", {"autoscaling": {"min": 0}})
    assert to_zero.status_code == 422 and "autoscaling" in to_zero.json()["error"]["details"][
        "fields"]
    changed = _run(stack, _patch(stack, cluster, "big", {"autoscaling": {"max": 3}}))
    assert changed["status"] == "succeeded", changed
    # the Services again too (an endpoint made before the load reader gets its Service)
    assert [s["name"] for s in changed["steps"]] == ["deploy", "service", "autoscaler"]
    scaled = kube.get_object("keda.sh/v1alpha1", "ScaledObject", "big", "default")
    assert scaled["spec"]["maxReplicaCount"] == 3
    assert _run(stack, _delete(stack, cluster, "big"))["status"] == "succeeded"
    assert kube.get_object("keda.sh/v1alpha1", "ScaledObject", "big", "default") is None
    assert kube.get_object("v1", "ConfigMap", "big-router-load", "default") is None


def test_an_sglang_endpoint_is_not_autoscaled_from_zero_servers(stack, cluster):
    body = {"name": "idle", "kind": "sglang", "model": "qwen", "gpus": 1,
            "autoscaling": {"min": 0, "max": 2}}
    reply = _post(stack, cluster, "endpoints", body)
    assert reply.status_code == 422, reply.text
    assert "at least 1" in reply.json()["error"]["details"]["fields"]["autoscaling"][0]


# -- through MCP (a real client over stdio) ----------------------------------------------

@pytest.mark.asyncio
async def test_an_agent_reads_pools_reassigns_and_invokes_over_mcp(stack, cluster, pool):
    from tests.mcp_server.test_mcp_e2e import _follow, _stdio

    async with _stdio(stack, stack.operator_token) as client:
        listed = (await client.call_tool("list_endpoints", {"cluster": cluster}))
        assert not listed.is_error, listed.content[0].text
        view = next(i for i in listed.structured_content["items"] if i["name"] == "pool")
        assert {w["name"] for w in view["workers"]} == set(_workers(stack, cluster))
        got = await client.call_tool("get_endpoint", {"cluster": cluster, "name": "pool"})
        assert not got.is_error, got.content[0].text  # within its output schema (the SDK's check)
        assert got.structured_content["name"] == "pool"
        worker = _free_worker(stack, cluster)
        for other in _workers(stack, cluster):
            if other != worker and _workers(stack, cluster)[other]["metadata"]["labels"][
                    POOL_LABEL] == "qwen":
                _assign(stack, cluster, other, "unassigned")  # qwen's only worker: this one
        reply = await client.call_tool("reassign_endpoint_worker", {
            "cluster": cluster, "name": "pool", "worker": worker, "model": "qwen"})
        assert not reply.is_error, reply.content[0].text
        assert (await _follow(client, reply.structured_content))["status"] == "succeeded"
        answer = await client.call_tool("invoke_endpoint", {
            "cluster": cluster, "name": "pool", "prompt": "hello", "model": "qwen"})
        assert not answer.is_error, answer.content[0].text
        assert answer.structured_content["response"]["system_fingerprint"] == worker
        assert answer.structured_content["status_tool"] == "get_endpoint"
        refused = await client.call_tool("invoke_endpoint", {
            "cluster": cluster, "name": "pool", "prompt": "hello", "path": "/etc"})
        assert refused.is_error and "path" in refused.content[0].text  # refused, nothing sent
    async with _stdio(stack, stack.viewer_token) as viewer:
        names = {t.name for t in (await viewer.list_tools()).tools}
        assert {"list_endpoints", "get_endpoint", "list_models"} <= names
        assert not {"create_endpoint", "invoke_endpoint", "reassign_endpoint_worker",
                    "download_model"} & names


# -- what depends on a pool and on a model (last: they go) -----------------------------------

def _models_url(cluster: str, model: str) -> str:
    return f"/api/v1/clusters/{cluster}/models/{model}"


def test_a_pool_and_the_models_it_serves_go_only_past_what_depends_on_them(stack, cluster,
                                                                          served, pool):
    worker = _free_worker(stack, cluster)
    _assign(stack, cluster, worker, "qwen")
    serving = sorted(n for n, p in _workers(stack, cluster).items()
                     if p["metadata"]["labels"][POOL_LABEL] == "qwen")
    ops_before = stack.redis().zcard("hypd:ops")
    with stack.client() as c:
        # a model an endpoint serves is not removed: a restarting server would find nothing
        refused = c.delete(_models_url(cluster, "qwen"))
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "in_use"
        assert error["details"]["dependents"] == [
            {"kind": "endpoint", "name": "pool", "namespace": "default", "cluster": None,
             "why": "vllm endpoint serving llama, qwen", "forceable": True}]
        assert c.delete(_models_url(cluster, "nothing-here")).status_code == 404
        # a pool whose workers serve models: refused, naming each model and its workers
        refused = _delete(stack, cluster, "pool")
        assert refused.status_code == 409, refused.text
        [qwen] = [d for d in refused.json()["error"]["details"]["dependents"]
                  if d["name"] == "qwen"]
        assert qwen["kind"] == "model" and qwen["why"].endswith(", ".join(serving))
    assert stack.redis().zcard("hypd:ops") == ops_before  # nothing recorded
    with stack.client("viewer") as c:
        plan = c.delete(f"/api/v1/clusters/{cluster}/endpoints/pool",
                        params={"dry_run": "true"}).json()
        model_plan = c.delete(_models_url(cluster, "qwen"), params={"dry_run": "true"}).json()
    assert plan["refused"] is True and "Deployment default/pool" in plan["removes"]
    assert "Service default/pool-qwen" in plan["removes"]
    assert model_plan["removes"][0].endswith("/models/qwen/ (1 files, 2 bytes)")
    with stack.client() as c:  # the user accepts that the pool's models stop being served
        forced = c.delete(f"/api/v1/clusters/{cluster}/endpoints/pool", params={"force": "true"})
    assert _run(stack, forced)["status"] == "succeeded"
    # nothing serves qwen any more: it goes without force, and only its files
    with stack.client() as c:
        removed = _run(stack, c.delete(_models_url(cluster, "qwen")))
        listed = {m["name"] for m in c.get(f"/api/v1/clusters/{cluster}/models").json()["items"]}
    assert removed["kind"] == "model.delete" and removed["status"] == "succeeded", removed
    assert removed["steps"][0]["resources"]["removed"] == 1
    assert "qwen" not in listed and {"tiny", "llama"} <= listed
    # the model an endpoint still serves goes only when the user says so
    with stack.client() as c:
        refused = c.delete(_models_url(cluster, "tiny"))
        assert refused.status_code == 409, refused.text
        assert [(d["kind"], d["name"]) for d in refused.json()["error"]["details"][
            "dependents"]] == [("endpoint", served)]
        forced = _run(stack, c.delete(_models_url(cluster, "tiny"), params={"force": "true"}))
        listed = {m["name"] for m in c.get(f"/api/v1/clusters/{cluster}/models").json()["items"]}
    assert forced["status"] == "succeeded" and "tiny" not in listed
