"""schemathesis against /api/v1/openapi.json on the real stack: no 5xx, and every reply
matches the schema the document declares.

Reads run on the session's stack. Mutations run on a stack of their own: a fuzzed body that
happens to be valid starts a real operation on the sandbox, which must not disturb the other
tests' targets, and whatever it started dies with that stack. Half of a mutation's cases aim
at real targets (a cluster made through the API, its group, one of its nodes, a failed
operation), so fuzzed bodies reach the routes' own checks rather than stopping at 404; the
cluster's delete goes last.

Data that breaks the schemas (schemathesis's negative mode) goes to every route on the
session's stack, each mutation aimed at a target that does not exist: refused below 500, in
the envelope, and nothing started.

Driven through schemathesis's strategies and hypothesis directly (its pytest plugin does
not run on pytest 9 here); examples are capped to fit the suite's time budget."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

from tasks.engine.store import OPS_INDEX
from tests.stack import Stack

# examples per operation: the default run's, then the long form's (-m slow, with the campaign)
MAX_EXAMPLES = (5, 12)
MUTATION_EXAMPLES = (4, 8)
NEGATIVE_EXAMPLES = (2, 4)


def _runs(counts: tuple[int, int]) -> Any:
    """The default run and the long form (marked slow) of a fuzz test, by example count."""
    short, long = counts
    return pytest.mark.parametrize("examples", [
        pytest.param(short, id="default"), pytest.param(long, id="long", marks=pytest.mark.slow)])


Targets = dict[str, dict[str, str]]
"""Per path template, real values for its path parameters."""


def _last(label: str) -> int:
    """Sort key: deletes of whole clusters after everything else that needs the cluster."""
    return 1 if label == "DELETE /api/v1/clusters/{name}" else 0


def _fuzz(url: str, token: str, method_filter: dict[str, Any], examples: int,
          targets: Targets | None = None) -> list[str]:
    """Every operation the filter selects, `examples` cases each: no reply is a 5xx, and a
    2xx reply matches the schema the document declares for it. With `targets`, a drawn half
    of the cases carry real path parameters."""
    schema = schemathesis.openapi.from_url(url + "/api/v1/openapi.json")
    auth = {"Authorization": f"Bearer {token}"}
    operations = [r.ok() for r in schema.include(**method_filter).get_all_operations()]
    for operation in sorted(operations, key=lambda o: _last(o.label)):
        _fuzz_one(operation, auth, examples, (targets or {}).get(operation.path))
    return [operation.label for operation in operations]


def _fuzz_one(operation: Any, auth: dict[str, str], examples: int,
              real: dict[str, str] | None) -> None:
    @given(case=operation.as_strategy(), aim=st.booleans())
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(case, aim):
        if real and aim:
            case.path_parameters = {**(case.path_parameters or {}), **real}
        response = case.call(headers=auth, timeout=60)
        assert response.status_code < 500, (case.method, case.formatted_path, case.query,
                                            case.body, response.status_code,
                                            response.text[:300])
        if 200 <= response.status_code < 300:
            case.validate_response(response, checks=[response_schema_conformance])

    run()


@pytest.fixture(scope="module")
def own_stack() -> Iterator[Stack]:
    running = Stack().start()
    try:
        yield running
    finally:
        running.stop()


def _targets(stack: Stack) -> Targets:
    """A cluster made through the API, its group, and a failed operation."""
    name = "fuzz"
    with stack.client() as c:
        reply = c.post("/api/v1/clusters", json={
            "name": name, "availability_zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
            "instance_count": 2})
        assert reply.status_code == 202, reply.text
        assert stack.wait_operation(reply.json()["operation"]["id"], 300)["status"] == "succeeded"
        group = c.get(f"/api/v1/clusters/{name}/instance-groups").json()["items"][0]["name"]
        stack.sandbox.add_fault("ec2", "CreateVpc", "error", count=1)
        failed = c.post("/api/v1/networks", json={"name": "fuzz-failed"}).json()
    assert stack.wait_operation(failed["operation"]["id"])["status"] == "failed"
    cluster = {"name": name}
    return {
        "/api/v1/clusters/{name}": cluster,
        "/api/v1/clusters/{name}/stages/{stage}/run": cluster,
        "/api/v1/clusters/{name}/software-update": cluster,
        "/api/v1/clusters/{name}/kubernetes-version": cluster,
        "/api/v1/clusters/{cluster}/storage": {"cluster": name},
        "/api/v1/clusters/{cluster}/storage/{name}": {"cluster": name},
        "/api/v1/clusters/{cluster}/instance-groups": {"cluster": name},
        "/api/v1/clusters/{cluster}/instance-groups/{name}": {"cluster": name, "name": group},
        **{f"/api/v1/clusters/{{cluster}}/nodes/{action}": {"cluster": name}
           for action in ("reboot", "replace", "delete")},
        "/api/v1/operations/{operation_id}/cancel": {"operation_id": failed["operation"]["id"]},
        "/api/v1/operations/{operation_id}/retry": {"operation_id": failed["operation"]["id"]},
        "/api/v1/networks/{name}": {"name": "fuzz-failed"},
    }


@_runs(MAX_EXAMPLES)
def test_reads_never_fail_and_match_their_schema(stack, examples):
    checked = _fuzz(stack.url, stack.operator_token, {"method": "GET"}, examples)
    assert len(checked) >= 10, checked


@_runs(MUTATION_EXAMPLES)
def test_mutations_never_fail_and_match_their_schema(own_stack, examples):
    """Every POST, PUT, PATCH and DELETE with an operator's token (a viewer's would stop at
    403 before any of the route's own code ran)."""
    targets = _targets(own_stack)
    checked = _fuzz(own_stack.url, own_stack.operator_token,
                    {"method": ["POST", "PUT", "PATCH", "DELETE"]}, examples, targets)
    assert len(checked) >= 16, checked
    assert set(targets) <= {label.split(" ", 1)[1] for label in checked}, "a target names no route"



def _still_negative(case: Any) -> bool:
    """Whether some part of a negative-mode case still breaks its schema: schemathesis's
    negation can come out valid (a body {"name": "a"} drawn for POST /networks), which is a
    real request the server rightly accepts, not data that breaks the schemas."""
    meta = case.meta
    if meta is None:
        return True
    for location in meta.components:
        meta.mark_dirty(location)
    case.operation.schema.revalidate_case_metadata(case)
    return meta.generation.mode.is_negative


@_runs(NEGATIVE_EXAMPLES)
def test_data_that_breaks_the_schemas_is_refused_below_500(stack, examples):
    """Every operation with something to break (a route with no parameter and no body has
    nothing: hypothesis finds it unsatisfiable)."""
    schema = schemathesis.openapi.from_url(stack.url + "/api/v1/openapi.json")
    auth = {"Authorization": f"Bearer {stack.operator_token}"}
    started = stack.redis().zcard(OPS_INDEX)
    broken = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(GenerationMode.NEGATIVE))
        @settings(max_examples=examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case):
            if case.method != "GET":  # nothing of that name: a valid request 404s
                case.path_parameters = dict.fromkeys(case.path_parameters or {}, "zz-absent")
            assume(_still_negative(case))
            response = case.call(headers=auth, timeout=60)
            what = (case.method, case.formatted_path, case.query, str(case.body)[:200],
                    response.status_code, response.text[:300])
            assert response.status_code < 500, what
            if response.status_code >= 400:
                assert set(response.json()) == {"error"}, what
            else:
                assert case.method == "GET", what

        try:
            run()
        except Unsatisfiable:
            continue
        broken.append(operation.label)
    assert len(broken) >= 40, broken
    assert stack.redis().zcard(OPS_INDEX) == started
