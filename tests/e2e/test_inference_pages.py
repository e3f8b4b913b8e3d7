"""The inference pages in a real browser: a model pool's workers with the model each serves,
reassigned by menu (the worker stays; only its label changes), and a model download
followed to the end with its files and bytes."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.test_clusters_api import _body, _create, _name
from tests.app.test_endpoints_api import GPU_TYPE, _upload_model
from tests.e2e.helpers import AWS_READ_TIMEOUT_MS, OPERATION_TIMEOUT_MS, base, sign_in

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = _name("ui-inf")
    assert _create(stack, _body(name, instance_type=GPU_TYPE, instance_count=1))[
        "status"] == "succeeded"
    for model in ("llama", "qwen"):
        _upload_model(stack, name, model)
    with stack.client() as c:
        reply = c.post(f"/api/v1/clusters/{name}/endpoints", json={
            "name": "pool", "kind": "vllm", "model": "llama", "gpus": 1, "replicas": 2,
            "service": "pool", "pool_models": ["llama", "qwen"]})
    assert stack.wait_operation(reply.json()["operation"]["id"], timeout=120)[
        "status"] == "succeeded"
    return name


def _workers(stack, cluster: str) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in stack.kube(cluster).list_objects(
        "v1", "Pod", "default") if p["metadata"].get("labels", {}).get(
            "hypd.io/endpoint") == "pool"}


def test_a_pool_worker_is_reassigned_by_menu(page, stack, cluster):
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(f"{base(stack)}/#/clusters/{cluster}/endpoints")
    expect(page.get_by_test_id("endpoint-row-pool")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    worker = sorted(_workers(stack, cluster))[0]
    uid = _workers(stack, cluster)[worker]["metadata"]["uid"]
    expect(page.get_by_test_id(f"worker-model-{worker}")).to_have_text("unassigned")
    page.get_by_test_id(f"worker-model-select-{worker}").select_option("qwen")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(
            f"/api/v1/clusters/{cluster}/endpoints/pool/reassign")) as sent:
        page.get_by_test_id(f"worker-reassign-{worker}").click()
    assert sent.value.post_data_json == {"worker": worker, "model": "qwen"}
    expect(page.get_by_test_id(f"worker-model-{worker}")).to_have_text(
        "qwen", timeout=OPERATION_TIMEOUT_MS)
    after = _workers(stack, cluster)[worker]
    assert after["metadata"]["uid"] == uid
    assert after["metadata"]["labels"]["hypd.io/model"] == "qwen"


def test_a_viewer_sees_the_pool_but_cannot_reassign(page, stack, cluster):
    sign_in(page, stack, stack.viewer_token, "viewer")
    page.goto(f"{base(stack)}/#/clusters/{cluster}/endpoints")
    expect(page.get_by_test_id("endpoint-row-pool")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    worker = sorted(_workers(stack, cluster))[0]
    expect(page.get_by_test_id(f"worker-reassign-{worker}")).to_be_disabled()
    expect(page.get_by_test_id("endpoints-role-hint")).to_be_visible()


def test_a_download_shows_its_progress_to_the_end(page, stack, cluster):
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(f"{base(stack)}/#/clusters/{cluster}/models")
    expect(page.get_by_test_id("model-row-llama")).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("model-name").fill("tiny-ui")
    page.get_by_test_id("model-repo").fill("acme/tiny")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(
            f"/api/v1/clusters/{cluster}/models")) as sent:
        page.get_by_test_id("model-download").click()
    assert sent.value.post_data_json == {"name": "tiny-ui", "source": "huggingface",
                                         "repo": "acme/tiny", "revision": "main"}
    expect(page.get_by_test_id("model-state-tiny-ui")).to_have_text(
        "available", timeout=OPERATION_TIMEOUT_MS)
    expect(page.get_by_test_id("model-files-tiny-ui")).to_have_text("4")
