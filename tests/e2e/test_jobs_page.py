"""The jobs page in a real browser: headless Chromium submits a torchrun job from the form,
the page follows its operation (202) and then sees its log lines arrive over the WebSocket;
the pod filter and Pause act on the view; a job deleted from its row is followed until it is
gone."""

from __future__ import annotations

import re
import uuid

import pytest
from botocore.exceptions import ClientError

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from tests.e2e.helpers import (
    AWS_READ_TIMEOUT_MS,
    base,
    destroy_dialog,
    page_checks,
    plan_read,
    sign_in,
)

pytestmark = pytest.mark.browser


def test_chromium_submits_a_torchrun_job_from_the_form_and_sees_its_log_lines(page, stack,
                                                                             training):
    cluster = training["name"]
    name = f"ui-{uuid.uuid4().hex[:5]}"
    stack.sandbox.set_training(steps=400, lines_per_second=0.4, job=name)  # ~1 s of lines
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(f"{base(stack)}/#/clusters/{cluster}/jobs")
    expect(page.get_by_test_id("job-elastic-limits")).to_contain_text("spot capacity",
                                                                      timeout=AWS_READ_TIMEOUT_MS)
    page.get_by_test_id("job-recipe").select_option("torchrun")
    expect(page.get_by_test_id("job-field-config")).to_be_hidden()
    # no teams share this cluster: no team or priority to choose, nor a Team column
    for testid in ("job-field-team", "job-field-priority", "jobs-team-head"):
        expect(page.get_by_test_id(testid)).to_be_hidden()
    namespace = page.get_by_test_id("job-namespace")
    expect(namespace).to_be_editable()
    page.get_by_test_id("job-name").fill(name)
    page.get_by_test_id("job-image").fill("repo/train:1")
    page.get_by_test_id("job-script").fill("/s3/code/train.py")
    page.get_by_test_id("job-gpus").fill("1")
    # a namespace Kubernetes would not take: refused on its field
    namespace.fill("Not_A_Namespace")
    page.get_by_test_id("job-submit").click()
    expect(page.get_by_test_id("error-job-namespace")).to_contain_text(
        "not a Kubernetes namespace name")
    namespace.fill("")
    # more nodes than the cluster has: refused on the field, cleared by the good submit
    nodes, nodes_error = page.get_by_test_id("job-nodes"), page.get_by_test_id("error-job-nodes")
    nodes.fill("99")
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.endswith("/jobs")) as refused:
        page.get_by_test_id("job-submit").click()
    assert refused.value.status == 422, refused.value.text()
    expect(nodes_error).to_contain_text("99 nodes asked")
    nodes.fill("1")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/jobs")) as sent:
        page.get_by_test_id("job-submit").click()
    assert sent.value.post_data_json["recipe"] == "torchrun"
    assert "team" not in sent.value.post_data_json
    expect(nodes_error).to_be_empty()
    expect(nodes).to_have_attribute("aria-invalid", "false")
    assert sent.value.headers.get("idempotency-key")
    accepted = sent.value.response()
    assert accepted.status == 202 and accepted.json()["operation"]["kind"] == "job.create"
    # once its operation succeeded, the job's log view opens and its lines arrive as the pod
    # prints them
    expect(page.get_by_test_id("log-job")).to_have_text(name)
    rows = page.get_by_test_id("log-row")
    expect(rows.filter(has_text=re.compile(r"step \d+/400")).first).to_be_visible(
        timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("log-status")).to_have_text("ended · succeeded",
                                                           timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id("log-count")).to_have_text("401 lines")
    # following the end: the newest line is in view, and only a screenful is in the DOM
    expect(rows.filter(has_text="step 400/400")).to_be_visible()
    assert rows.count() < 60
    # scrolled to the top, the first lines are rendered in their place, in order
    page.get_by_test_id("log-viewport").evaluate("el => { el.scrollTop = 0; }")
    expect(rows.first).to_contain_text(f"{name}-pods-0: starting {name}")
    expect(rows.nth(1)).to_contain_text("step 1/400")
    expect(page.get_by_test_id(f"job-state-{name}")).to_have_text("succeeded",
                                                                timeout=AWS_READ_TIMEOUT_MS)
    # each line with its time, as the API gives it
    with stack.client("viewer") as c:
        [first] = c.get(f"/api/v1/clusters/{cluster}/jobs/{name}/logs",
                        params={"tail": 401}).json()["lines"][:1]
        job = c.get(f"/api/v1/clusters/{cluster}/jobs/{name}").json()
    expect(rows.first.locator(".log-time")).to_have_attribute("title", first["time"])
    expect(rows.first.locator(".log-time")).to_have_text(re.compile(r"^\d{1,2}:\d{2}:\d{2}$"))
    # the job's detail beside its log: state, how long it ran, each pod on its node, events
    detail = page.get_by_test_id("job-detail")
    expect(detail.get_by_test_id("job-detail-state")).to_have_text("succeeded")
    expect(detail.get_by_test_id("job-duration")).to_have_text(re.compile(r"^\d"))
    assert job["pods"], job
    for pod in job["pods"]:
        expect(detail.get_by_test_id(f"job-pod-{pod['name']}")).to_have_attribute(
            "data-node", pod["node"] or "")
    expect(detail.get_by_test_id("job-event")).to_have_count(len(job["events"]))
    expect(detail.get_by_test_id("job-detail-budget")).to_contain_text(
        f"{job['recovery_budget']['used']} restart" if job["recovery_budget"] else "none")
    # the pod filter knows the pod; Pause stops the view from moving
    page.get_by_test_id("log-pod-filter").select_option(f"{name}-pods-0")
    expect(page.get_by_test_id("log-count")).to_have_text("401 lines")
    page.get_by_test_id("log-pause").click()
    expect(page.get_by_test_id("log-pause")).to_have_text("Resume")
    page_checks(page, "a job's log")
    # the MLflow card: nothing attached, the create/attach form, and the API's own refusal of
    # an unknown tracking server shown as it said it (the flow itself: test_mlflow_api.py)
    expect(page.get_by_test_id("mlflow-state")).to_have_text("none")
    expect(page.get_by_test_id("mlflow-create")).to_be_enabled()
    page.get_by_test_id("mlflow-existing").fill("no-such-server")
    with page.expect_request(lambda r: r.method == "PUT" and r.url.endswith("/mlflow")) as put:
        page.get_by_test_id("mlflow-attach").click()
    assert put.value.post_data_json == {"tracking_server": "no-such-server"}
    assert put.value.headers.get("idempotency-key")
    expect(page.get_by_test_id("toast-message").last).to_contain_text(
        "no tracking server no-such-server")
    expect(page.get_by_test_id("error-mlflow-tracking_server")).to_contain_text(
        "no tracking server no-such-server")  # and on its field (form_fields.js)
    expect(page.get_by_test_id("mlflow-existing")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_test_id("mlflow-state")).to_have_text("none")
    # deleted from its row: the page follows the delete's operation until the job is gone
    page.get_by_test_id(f"job-delete-{name}").click()
    dialog = destroy_dialog(page, "job", name, "job-delete")
    plan_read(dialog)
    with page.expect_response(lambda r: r.request.method == "DELETE"
                              and r.url.endswith(f"/jobs/{name}")) as gone:
        dialog.get_by_test_id("destroy-dialog-confirm").click()
    assert gone.value.status == 202
    assert gone.value.json()["operation"]["kind"] == "job.delete"
    expect(page.get_by_test_id("toast-message").last).to_contain_text(
        f"Job {name} deleted.", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id(f"job-row-{name}")).to_have_count(0)


def test_chromium_shows_why_a_job_is_refused_or_waits(page, stack, training):
    """A job the cluster can never hold: the form shows the API's refusal with its numbers
    and marks the field. A job that fits but waits for GPUs another job holds: its row says
    why, in the scheduler's words — and an endpoint's row on the endpoints page too."""
    from tests.app.jobkit import (
        TORCHRUN,
        an_endpoint_waits_too,
        deleted,
        get_job,
        job_name,
        submitted,
        wait_state,
    )
    from tests.stack import wait_until

    cluster = training["name"]
    hog, waiter = job_name("ui-hog"), job_name("ui-wait")
    stack.sandbox.set_training(steps=1000, lines_per_second=0.01, job=hog)  # runs on
    stack.sandbox.set_training(steps=2, lines_per_second=20, job=waiter)
    submitted(stack, cluster, {"name": hog, **TORCHRUN, "nodes": 2})
    try:
        wait_state(stack, cluster, hog, "running")
        submitted(stack, cluster, {"name": waiter, **TORCHRUN})
        wait_until(lambda: get_job(stack, cluster, waiter)["waiting"], 30, interval=0.2,
                   what="the waiter's reason")
        sign_in(page, stack, stack.operator_token, "operator")
        page.goto(f"{base(stack)}/#/clusters/{cluster}/jobs")
        note = page.get_by_test_id(f"job-waiting-{waiter}")
        expect(note).to_contain_text(f"Pod {waiter}-pods-0 waits for capacity: 0/2 nodes are "
                                     "available: 2 Insufficient nvidia.com/gpu.",
                                     timeout=AWS_READ_TIMEOUT_MS)
        expect(page.get_by_test_id(f"job-state-{waiter}")).to_have_text("pending")
        # its detail says why too, with the scheduler's event, and no node for its pod
        page.get_by_test_id(f"job-open-{waiter}").click()
        detail = page.get_by_test_id("job-detail")
        expect(detail.get_by_test_id("job-detail-waiting")).to_contain_text(
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
        expect(detail.get_by_test_id("job-detail-state")).to_have_text("pending")
        expect(detail.get_by_test_id(f"job-pod-{waiter}-pods-0")).to_contain_text("not placed")
        expect(page.get_by_test_id("job-elastic-limits")).to_contain_text(
            "spot capacity", timeout=AWS_READ_TIMEOUT_MS)
        page.get_by_test_id("job-recipe").select_option("torchrun")
        page.get_by_test_id("job-name").fill(job_name("ui-huge"))
        page.get_by_test_id("job-image").fill("repo/train:1")
        page.get_by_test_id("job-script").fill("/s3/code/train.py")
        page.get_by_test_id("job-gpus").fill("1")
        page.get_by_test_id("job-nodes").fill("99")
        page.get_by_test_id("job-submit").click()
        # said once, on its field (form_fields.js), the focus with it
        expect(page.get_by_test_id("error-job-nodes")).to_contain_text(
            "99 nodes asked, each with 1 GPU; the cluster can hold at most 2: group "
            "'workers' holds 2", timeout=AWS_READ_TIMEOUT_MS)
        expect(page.get_by_test_id("job-nodes")).to_have_attribute("aria-invalid", "true")
        expect(page.get_by_test_id("job-nodes")).to_be_focused()
        expect(page.get_by_test_id("job-form-error")).to_be_empty()

        def on_the_endpoints_page() -> None:  # an endpoint that waits says why there too
            page.goto(f"{base(stack)}/#/clusters/{cluster}/endpoints")
            expect(page.get_by_test_id("endpoint-waiting-queued")).to_contain_text(
                "waits for capacity: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
                timeout=AWS_READ_TIMEOUT_MS)

        an_endpoint_waits_too(stack, cluster, on_the_endpoints_page)
    finally:
        deleted(stack, cluster, hog, force="true")  # a running job goes only with force
    wait_state(stack, cluster, waiter, "succeeded")
    page.goto(f"{base(stack)}/#/clusters/{cluster}/jobs")
    expect(page.get_by_test_id(f"job-state-{waiter}")).to_have_text(
        "succeeded", timeout=AWS_READ_TIMEOUT_MS)
    expect(page.get_by_test_id(f"job-waiting-{waiter}")).to_have_count(0)


def test_mlflow_detach_asks_once_naming_the_server_and_what_goes(page, stack, training):
    """The MLflow card's Detach goes through the one confirmation (confirm.js): it names the
    tracking server and says detaching deletes it (hypd made it) before Detach is pressed;
    confirmed, the detach succeeds, AWS no longer has the server and the card shows none
    attached. The server is made from the card itself; the shared cluster is left without one,
    as its other tests expect."""
    cluster = training["name"]
    server = f"hypd-{cluster}"
    url = f"/api/v1/clusters/{cluster}/mlflow"
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(f"{base(stack)}/#/clusters/{cluster}/jobs")
    state = page.get_by_test_id("mlflow-state")
    expect(state).to_have_text("none", timeout=AWS_READ_TIMEOUT_MS)
    try:
        with page.expect_response(lambda r: r.request.method == "PUT"
                                  and r.url.endswith("/mlflow")) as put:
            page.get_by_test_id("mlflow-create").click()
        assert put.value.status == 202, put.value.text()
        created = stack.wait_operation(put.value.json()["operation"]["id"], timeout=120)
        assert created["status"] == "succeeded", created
        expect(state).to_have_text("ready", timeout=AWS_READ_TIMEOUT_MS)
        with stack.client("viewer") as c:
            arn = c.get(url).json()["tracking_server"]["arn"]
        expect(page.get_by_test_id("mlflow-arn")).to_have_text(arn)

        page.get_by_test_id("mlflow-detach").click()
        dialog = destroy_dialog(page, "tracking server from cluster", cluster, "mlflow-detach")
        expect(dialog.get_by_test_id("destroy-dialog-title")).to_contain_text("Detach")
        expect(dialog).to_contain_text(f"Detaches tracking server {server}")
        expect(dialog).to_contain_text("It is deleted with its runs (hypd made it).")
        plan_read(dialog)  # the route's dry run: what it removes, nothing depending on it
        expect(dialog.get_by_test_id("destroy-removes")).to_contain_text(
            f"tracking server {server} and its role")
        expect(dialog.get_by_test_id("destroy-no-dependents")).to_be_visible()
        page_checks(page, "the MLflow detach dialog")
        with page.expect_response(lambda r: r.request.method == "DELETE"
                                  and r.url.endswith("/mlflow")) as gone:
            dialog.get_by_test_id("destroy-dialog-confirm").click()
        assert gone.value.status == 202, gone.value.text()
        op = gone.value.json()["operation"]
        assert op["kind"] == "mlflow.detach"
        assert stack.wait_operation(op["id"], timeout=120)["status"] == "succeeded"
        expect(dialog).to_have_count(0)
        # the card shows it detached: none, and the create/attach form again
        expect(state).to_have_text("none", timeout=AWS_READ_TIMEOUT_MS)
        expect(page.get_by_test_id("mlflow-create")).to_be_enabled()
        expect(page.get_by_test_id("mlflow-arn")).to_have_count(0)
        with pytest.raises(ClientError) as deleted:
            stack.aws("sagemaker").describe_mlflow_tracking_server(TrackingServerName=server)
        assert deleted.value.response["Error"]["Code"] == "ResourceNotFound"
    finally:
        with stack.client() as c:
            if c.get(url).json()["state"] != "none":  # left attached by a failure above
                reply = c.delete(url, params={"force": "true"})
                stack.wait_operation(reply.json()["operation"]["id"], timeout=120)
