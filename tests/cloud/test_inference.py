"""The inference manifests: the InferenceEndpointConfig and KEDA's ScaledObject against the
real CRDs as closed schemas (a misspelt field fails), every core object (Deployments,
Services, the router's account and role) against Kubernetes' own schemas in strict mode, and
the pool's shape (the model label outside the selector)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest

from cloud import inference
from cloud.dependencies import MANIFEST_DIR
from cloud.inference import Autoscaling, Endpoint
from tests.crdkit import validate as validate_crd

K8S_VERSION = "1.33"
IEC_FILE = "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"
KEDA_FILE = "keda.sh_scaledobjects.yaml"  # KEDA 2.20.2's (../shared/crds)
KEDA_217_FILE = MANIFEST_DIR / "keda-crds" / KEDA_FILE  # 2.17.2's, as hypd installs it
BUCKET = "hypd-lab-123456789012-us-west-2"

ENDPOINTS = {
    "vllm-in-cluster": Endpoint(name="chat", kind="vllm", model="tiny", gpus=1, replicas=2,
                                instance_type="ml.g5.12xlarge"),
    "vllm-nlb": Endpoint(name="pub", kind="vllm", model="tiny", gpus=4,
                         service="load_balancer", args=("--max-model-len=8192",)),
    "sglang-routed": Endpoint(name="big", kind="sglang", model="llama", gpus=8, replicas=3,
                              routing="cache_aware",
                              autoscaling=Autoscaling(min=2, max=6, target=12.0)),
    "sglang-pool": Endpoint(name="pool", kind="sglang", model="llama", gpus=1, replicas=4,
                            service="pool", pool_models=("llama", "qwen")),
    "custom": Endpoint(name="mine", kind="custom", model="tiny", gpus=2,
                       image="ghcr.io/acme/server:1.2", port=9000, args=("--flag=1",)),
}
MANAGED = Endpoint(name="managed", kind="managed", model="llama", gpus=4, replicas=2,
                   instance_type="ml.g5.12xlarge", routing="kvaware", kv_cache_l2=True,
                   autoscaling=Autoscaling(min=1, max=4))


def test_the_inference_endpoint_config_fits_the_crd_as_a_closed_schema():
    config = inference.endpoint_config(MANAGED, BUCKET, "us-west-2")
    validate_crd(config, IEC_FILE, "v1")
    spec = config["spec"]
    assert spec["modelSourceConfig"] == {
        "modelSourceType": "s3", "s3Storage": {"bucketName": BUCKET, "region": "us-west-2"},
        "modelLocation": "models/llama"}
    assert spec["kvCacheSpec"] == {"enableL1Cache": True, "enableL2Cache": True,
                                   "l2CacheSpec": {"l2CacheBackend": "tieredstorage"}}
    assert spec["intelligentRoutingSpec"] == {"enabled": True, "routingStrategy": "kvaware"}
    assert spec["autoScalingSpec"]["minReplicaCount"] == 1
    assert spec["autoScalingSpec"]["maxReplicaCount"] == 4
    assert spec["worker"]["resources"]["limits"] == {"nvidia.com/gpu": "4"}


def test_a_misspelt_field_fails_the_closed_crd_schema():
    config = inference.endpoint_config(MANAGED, BUCKET, "us-west-2")
    config["spec"]["kvCacheSpec"]["enableL3Cache"] = True
    with pytest.raises(jsonschema.ValidationError):
        validate_crd(config, IEC_FILE, "v1")


def test_the_scaled_object_fits_kedas_crd_with_fields_keda_2_17_knows():
    ep = ENDPOINTS["sglang-routed"]
    scaled = inference.scaled_object(ep)
    validate_crd(scaled, KEDA_FILE, "v1alpha1")
    assert scaled["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1",
                                                "kind": "Deployment", "name": "big"}
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (2, 6)
    assert "tolerance" not in json.dumps(scaled)  # KEDA 2.20's, not 2.17's
    validate_crd(scaled, str(KEDA_217_FILE), "v1alpha1")  # the CRD hypd installs
    scaled["spec"]["triggers"][0]["metaData"] = {}
    with pytest.raises(jsonschema.ValidationError):
        validate_crd(scaled, KEDA_FILE, "v1alpha1")


def test_keda_reads_the_servers_total_load_from_the_reader_beside_the_router():
    """One number that is already the total, read as AverageValue (the HPA divides it by
    the target once), from the load reader's in-cluster Service — not the router's
    per-worker gauge, of which KEDA 2.17 would take the first series."""
    ep = ENDPOINTS["sglang-routed"]
    parts = inference.objects(ep, BUCKET, "us-west-2")
    (trigger,) = inference.scaled_object(ep)["spec"]["triggers"]
    assert trigger["type"] == "metrics-api" and trigger["metricType"] == "AverageValue"
    meta = trigger["metadata"]
    assert (meta["format"], meta["valueLocation"], meta["targetValue"]) == (
        "json", "load", "12.0")
    assert "sgl_router" not in json.dumps(trigger)
    # the URL is the reader's Service, in the cluster, on the port the reader listens on
    front, load = parts.services
    assert meta["url"] == (f"http://{load['metadata']['name']}.{ep.namespace}"
                           f".svc.cluster.local:{load['spec']['ports'][0]['port']}/load")
    assert load["spec"]["type"] == "ClusterIP"
    assert load["spec"]["selector"] == front["spec"]["selector"]
    assert inference.LOAD_PORT not in [p["port"] for p in front["spec"]["ports"]]
    router = next(o for o in parts.router if o["kind"] == "Deployment")
    pod = router["spec"]["template"]["spec"]
    reader = next(c for c in pod["containers"] if c["name"] == "load")
    assert reader["ports"][0]["containerPort"] == load["spec"]["ports"][0]["targetPort"]
    assert reader["command"][:2] == ["python3", "/etc/hypd/load/sglang_load.py"]
    # what runs is the tested file itself, mounted from a ConfigMap hypd makes from it
    config = next(o for o in parts.router if o["kind"] == "ConfigMap")
    program = (Path(inference.__file__).parent / "incluster" / "sglang_load.py").read_text()
    assert config["data"] == {"sglang_load.py": program}
    assert {"name": "load", "configMap": {"name": config["metadata"]["name"]}} in pod["volumes"]
    assert router["spec"]["template"]["metadata"]["annotations"][
        inference.LOAD_ANNOTATION] == hashlib.sha256(program.encode()).hexdigest()
    assert ("v1", "ConfigMap") in inference.KINDS_OWNED  # a delete finds it


@pytest.mark.parametrize("case", sorted(ENDPOINTS))
def test_core_objects_fit_kubernetes_own_schemas(case):
    parts = inference.objects(ENDPOINTS[case], BUCKET, "us-west-2")
    core = [o for o in parts.all() if o["apiVersion"] != inference.KEDA_API]
    assert core
    for obj in core:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_a_misspelt_deployment_field_fails_kubernetes_schema():
    deployment = inference.server_deployment(ENDPOINTS["vllm-in-cluster"])
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)


def test_a_servers_deployment_asks_for_its_gpus_probes_and_the_bucket():
    deployment = inference.server_deployment(ENDPOINTS["vllm-in-cluster"])
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert {"name": "s3", "mountPath": "/s3"} in container["volumeMounts"]
    assert {"name": "s3", "persistentVolumeClaim": {"claimName": "hypd-s3"}} in pod["volumes"]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "ml.g5.12xlarge"}
    assert "--tensor-parallel-size" in container["command"]


def test_an_external_service_is_an_nlb_for_the_load_balancer_controller():
    (service,) = inference.services(ENDPOINTS["vllm-nlb"])
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["loadBalancerClass"] == "service.k8s.aws/nlb"
    notes = service["metadata"]["annotations"]
    assert notes["service.beta.kubernetes.io/aws-load-balancer-type"] == "external"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip"


def test_a_pools_model_label_is_outside_the_deployments_selector():
    ep = ENDPOINTS["sglang-pool"]
    deployment = inference.server_deployment(ep)
    selector = deployment["spec"]["selector"]["matchLabels"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert inference.MODEL_LABEL not in selector
    assert labels[inference.MODEL_LABEL] == inference.UNASSIGNED
    assert all(labels[k] == v for k, v in selector.items())
    bindings = inference.services(ep)
    assert [s["metadata"]["name"] for s in bindings] == ["pool-llama", "pool-qwen"]
    for service, model in zip(bindings, ("llama", "qwen"), strict=True):
        assert service["spec"]["selector"] == {**selector, inference.MODEL_LABEL: model}
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["sh", "-c"]  # a fixed script: no user text in it
    assert container["command"][2] == inference._POOL_SCRIPT["sglang"]


def test_routed_sglang_gets_the_router_in_front():
    ep = ENDPOINTS["sglang-routed"]
    parts = inference.objects(ep, BUCKET, "us-west-2")
    router = next(o for o in parts.router if o["kind"] == "Deployment")
    command = router["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--policy") + 1] == "cache_aware"
    front, _load = parts.services
    assert front["metadata"]["name"] == ep.name
    assert front["spec"]["selector"][inference.ROLE_LABEL] == inference.ROUTER
    assert "replicas" not in parts.main[0]["spec"]  # KEDA owns them
    assert [o["kind"] for o in parts.autoscaler] == ["ScaledObject"]


def test_the_request_is_kept_on_the_main_object():
    ep = ENDPOINTS["sglang-routed"]
    assert inference.stored_spec(inference.server_deployment(ep)) == ep
    assert inference.stored_spec(inference.endpoint_config(MANAGED, BUCKET, "us-west-2")) \
        == MANAGED
