"""The inference pages in a real browser: an endpoint created from its form, seen ready,
tested with one completion and deleted; a model pool's workers with the model each serves,
reassigned by menu (the worker stays; only its label changes); model downloads (from the hub
and from an S3 prefix) followed to the end with their files and bytes."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.app.test_clusters_api import _body, _create, _name
from tests.app.test_endpoints_api import GPU_TYPE, _upload_model
from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    OPERATION_TIMEOUT_MS,
    base,
    cancel,
    destroy_dialog,
    page_checks,
    plan_read,
    sign_in,
)

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


def _open(page, stack, token: str, role: str, cluster: str, view: str) -> None:
    """Signed in, on the cluster's endpoints or models page once it has read the cluster."""
    sign_in(page, stack, token, role)
    page.goto(f"{base(stack)}/#/clusters/{cluster}/{view}")
    row = "endpoint-row-pool" if view == "endpoints" else "model-row-llama"
    expect(page.get_by_test_id(row)).to_be_visible(timeout=AWS_READ_TIMEOUT_MS)


def _workers(stack, cluster: str) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in stack.kube(cluster).list_objects(
        "v1", "Pod", "default") if p["metadata"].get("labels", {}).get(
            "hypd.io/endpoint") == "pool"}


def test_a_pool_worker_is_reassigned_by_menu(page, stack, cluster):
    _open(page, stack, stack.operator_token, "operator", cluster, "endpoints")
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
    page_checks(page, "the endpoints page with a pool")


def test_a_viewer_sees_the_pool_but_cannot_reassign(page, stack, cluster):
    _open(page, stack, stack.viewer_token, "viewer", cluster, "endpoints")
    worker = sorted(_workers(stack, cluster))[0]
    expect(page.get_by_test_id(f"worker-reassign-{worker}")).to_be_disabled()
    expect(page.get_by_test_id("endpoints-role-hint")).to_be_visible()
    expect(page.get_by_test_id("ep-create")).to_be_disabled()
    expect(page.get_by_test_id("endpoint-delete-pool")).to_be_disabled()


def test_an_endpoint_is_created_tested_and_deleted_from_its_page(page, stack, cluster):
    _open(page, stack, stack.operator_token, "operator", cluster, "endpoints")
    page.get_by_test_id("ep-name").fill("web")
    page.get_by_test_id("ep-kind").select_option("vllm")
    # the model is chosen from those the cluster's bucket holds
    expect(page.get_by_test_id("ep-model").locator("option")).to_have_text(
        ["Choose a model", "llama", "qwen"])
    page.get_by_test_id("ep-model").select_option("llama")
    page.get_by_test_id("ep-gpus").fill("1")
    # more replicas than the cluster can ever hold: the API's refusal on the field it names
    # (form_fields.js), cleared by the successful create that follows
    page.get_by_test_id("ep-replicas").fill("64")
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.endswith("/endpoints")) as refused:
        page.get_by_test_id("ep-create").click()
    assert refused.value.status == 422, refused.value.text()
    [named] = refused.value.json()["error"]["details"]["fields"]
    error = page.get_by_test_id(f"error-ep-{named}")
    expect(error).not_to_be_empty()
    expect(page.get_by_test_id(f"ep-{named}")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("ep-form-error")).to_be_empty()  # said once, on its field
    page.get_by_test_id("ep-replicas").fill("1")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(
            f"/api/v1/clusters/{cluster}/endpoints")) as sent:
        page.get_by_test_id("ep-create").click()
    assert sent.value.post_data_json == {"name": "web", "kind": "vllm", "model": "llama",
                                         "gpus": 1, "replicas": 1, "service": "in_cluster"}
    expect(error).to_be_empty()
    expect(page.get_by_test_id(f"ep-{named}")).to_have_attribute("aria-invalid", "false")
    expect(page.get_by_test_id("endpoint-state-web")).to_have_text(
        "ready", timeout=OPERATION_TIMEOUT_MS)
    page.get_by_test_id("endpoint-invoke-web").click()
    page.get_by_test_id("invoke-prompt").fill("Hello there")
    page.get_by_test_id("invoke-max-tokens").fill("4")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(
            "/endpoints/web/invoke")) as sent:
        page.get_by_test_id("invoke-confirm").click()
    assert sent.value.post_data_json == {"prompt": "Hello there", "max_tokens": 4}
    expect(page.get_by_test_id("invoke-service")).to_contain_text("default/web · HTTP 200")
    expect(page.get_by_test_id("invoke-text")).to_have_text(re.compile(r"^\s*\S+( \S+){3}$"))
    page.get_by_test_id("invoke-cancel").click()

    # scaled to 2 in place: only what changed is sent; beyond the cluster, the numbers
    page.get_by_test_id("endpoint-scale-web").click()
    page.get_by_test_id("scale-replicas").fill("64")
    with page.expect_response(lambda r: r.request.method == "PATCH") as refused:
        page.get_by_test_id("scale-dialog-confirm").click()
    assert refused.value.status == 422, refused.value.text()
    expect(page.get_by_test_id("error-scale-replicas")).not_to_be_empty()
    page.get_by_test_id("scale-replicas").fill("2")
    with page.expect_request(lambda r: r.method == "PATCH" and r.url.endswith(
            "/endpoints/web")) as sent:
        page.get_by_test_id("scale-dialog-confirm").click()
    assert sent.value.post_data_json == {"replicas": 2}
    expect(page.get_by_test_id("endpoint-ready-web")).to_have_text(
        "2 / 2", timeout=OPERATION_TIMEOUT_MS)
    deployment = stack.kube(cluster).get_object("apps/v1", "Deployment", "web", "default")
    assert deployment["spec"]["replicas"] == 2

    page.get_by_test_id("endpoint-delete-web").click()
    dialog = destroy_dialog(page, "endpoint", "web", "endpoint-delete")
    plan_read(dialog)
    expect(dialog.get_by_test_id("destroy-remove").first).to_be_visible()
    page_checks(page, "an endpoint's delete dialog", within="dialog[open]")
    with page.expect_request(lambda r: r.method == "DELETE" and r.url.endswith(
            "/endpoints/web")):
        dialog.get_by_test_id("destroy-dialog-confirm").click()
    expect(page.get_by_test_id("endpoint-row-web")).to_have_count(
        0, timeout=OPERATION_TIMEOUT_MS)
    assert stack.kube(cluster).get_object("apps/v1", "Deployment", "web", "default") is None


def test_a_download_shows_its_progress_to_the_end(page, stack, cluster):
    _open(page, stack, stack.operator_token, "operator", cluster, "models")
    page.get_by_test_id("model-name").fill("tiny-ui")
    page.get_by_test_id("model-repo").fill("acme/tiny")
    # a hub token Secret the cluster has not: the API's refusal on the Secret's name, cleared
    # by the successful download that follows
    secret = page.get_by_test_id("model-secret")
    secret.fill("no-such-secret")
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.endswith("/models")) as refused:
        page.get_by_test_id("model-download").click()
    assert refused.value.status == 422, refused.value.text()
    error = page.get_by_test_id("error-model-hub_token_secret.name")
    expect(error).to_contain_text("no-such-secret")
    expect(secret).to_have_attribute("aria-invalid", "true")
    expect(secret).to_be_focused()
    expect(page.get_by_test_id("model-form-error")).to_be_empty()
    secret.fill("")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(
            f"/api/v1/clusters/{cluster}/models")) as sent:
        page.get_by_test_id("model-download").click()
    assert sent.value.post_data_json == {"name": "tiny-ui", "source": "huggingface",
                                         "repo": "acme/tiny", "revision": "main"}
    expect(error).to_be_empty()
    expect(secret).to_have_attribute("aria-invalid", "false")
    expect(page.get_by_test_id("model-state-tiny-ui")).to_have_text(
        "available", timeout=OPERATION_TIMEOUT_MS)
    expect(page.get_by_test_id("model-files-tiny-ui")).to_have_text("4")
    # its removal asks once, through the one confirmation, naming it; cancelled, it stays
    page.get_by_test_id("model-remove-tiny-ui").click()
    dialog = destroy_dialog(page, "model", "tiny-ui", "model-remove")
    plan_read(dialog)
    page_checks(page, "the models page with a model's remove dialog")
    cancel(dialog)
    expect(page.get_by_test_id("model-state-tiny-ui")).to_have_text("available")


def test_an_s3_prefix_is_downloaded_from_the_form(page, stack, cluster):
    s3 = stack.aws("s3")
    s3.create_bucket(Bucket=f"src-{cluster}",
                     CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    s3.put_object(Bucket=f"src-{cluster}", Key="exports/m2/config.json", Body=b"{}")
    _open(page, stack, stack.operator_token, "operator", cluster, "models")
    page.get_by_test_id("model-name").fill("copied-ui")
    page.get_by_test_id("model-source").select_option("s3")
    expect(page.get_by_test_id("model-repo")).to_be_hidden()
    page.get_by_test_id("model-s3-uri").fill("not-a-uri")
    page.get_by_test_id("model-download").click()
    expect(page.get_by_test_id("error-model-s3_uri")).to_contain_text("s3://")
    page.get_by_test_id("model-s3-uri").fill(f"s3://src-{cluster}/exports/m2")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(
            f"/api/v1/clusters/{cluster}/models")) as sent:
        page.get_by_test_id("model-download").click()
    assert sent.value.post_data_json == {"name": "copied-ui", "source": "s3",
                                         "s3_uri": f"s3://src-{cluster}/exports/m2"}
    expect(page.get_by_test_id("model-state-copied-ui")).to_have_text(
        "available", timeout=OPERATION_TIMEOUT_MS)
    expect(page.get_by_test_id("model-files-copied-ui")).to_have_text("1")
