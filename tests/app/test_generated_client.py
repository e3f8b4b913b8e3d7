"""The scripted-HTTP user with a client nobody here wrote: openapi-python-client (pinned in the
test extra) generates a typed Python client from the live document, and that client creates
a network and follows its operation to `succeeded`.

The client is generated during the test, into a temporary folder, from
`GET /api/v1/openapi.json` of the running stack, so it is always the document's own (never a
checked-in copy that could drift). Its formatting hooks (ruff) are left out: measured on this
2-core machine, generation takes about 8 s without them and 18 s with them, and formatting
changes nothing a caller sees.

What it shows:
- the function names are the operationIds (`create_network.sync_detailed`,
  `get_operation.sync_detailed`): one module per operation, named as the MCP tools are;
- `Idempotency-Key` and `Idempotency-TTL` are typed keyword arguments, and the same key
  answers the same operation;
- every reply parses into its typed model: the 202 MutationReply, the Operation, the Network,
  and the refusals (409 conflict, 403 forbidden) into the envelope's `Error` model.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

PACKAGE = "hypd_generated_client"
GENERATOR = Path(sys.executable).parent / "openapi-python-client"


@pytest.fixture(scope="module")
def generated(stack, tmp_path_factory) -> Any:
    """The client generated from the live document, imported."""
    if not GENERATOR.exists():
        pytest.fail("openapi-python-client is not installed: pip install -e '.[test]' "
                    "(./dev.sh test does)")
    where = tmp_path_factory.mktemp("generated")
    with stack.client(token=None) as c:
        document = c.get("/api/v1/openapi.json").json()
    (where / "openapi.json").write_text(json.dumps(document))
    (where / "config.yaml").write_text("post_hooks: []\n")
    started = time.monotonic()
    done = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(where / "openapi.json"), "--meta", "none",
         "--output-path", str(where / PACKAGE), "--config", str(where / "config.yaml")],
        capture_output=True, text=True, timeout=240, cwd=where)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    # the generator warns about any part of the document it could not turn into code
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    print(f"openapi-python-client generated the client in {took:.1f} s")
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE), document
    finally:
        sys.path.remove(str(where))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _api(package: Any, tag: str, operation_id: str) -> Any:
    return importlib.import_module(f"{package.__name__}.api.{tag}.{operation_id}")


def test_each_operation_is_a_function_named_by_its_operation_id(generated) -> None:
    package, document = generated
    root = Path(package.__file__).parent / "api"
    modules = {path.stem for path in root.glob("*/*.py") if path.stem != "__init__"}
    operation_ids = {op["operationId"] for item in document["paths"].values()
                     for method, op in item.items() if method != "parameters"}
    assert modules == operation_ids


def test_a_network_create_followed_to_succeeded(stack, generated) -> None:
    package, _ = generated
    models = importlib.import_module(f"{package.__name__}.models")
    create_network = _api(package, "networks", "create_network")
    get_network = _api(package, "networks", "get_network")
    get_operation = _api(package, "operations", "get_operation")
    operator = package.AuthenticatedClient(base_url=stack.url, token=stack.operator_token,
                                           timeout=60)
    name = f"gen-{uuid.uuid4().hex[:6]}"
    key = f"generated-client-{uuid.uuid4().hex}"

    reply = create_network.sync_detailed(client=operator, body=models.NetworkCreate(name=name),
                                         idempotency_key=key, idempotency_ttl=600)
    assert reply.status_code == 202, reply.content
    created = reply.parsed
    assert isinstance(created, models.MutationReply)
    op_id = created.operation.id
    assert created.status_route == f"/api/v1/operations/{op_id}"
    assert created.resource_url == f"/api/v1/networks/{name}"

    # the same key and body: the same operation, nothing new started
    again = create_network.sync_detailed(client=operator, body=models.NetworkCreate(name=name),
                                         idempotency_key=key, idempotency_ttl=600)
    assert again.status_code == 202 and again.parsed.operation.id == op_id

    # follow it the way the reply says: read the operation (long-poll) until it is final
    deadline = time.monotonic() + 90
    while True:
        read = get_operation.sync_detailed(operation_id=op_id, client=operator, wait=5.0)
        assert read.status_code == 200, read.content
        operation = read.parsed
        assert isinstance(operation, models.Operation)
        if operation.status.value in ("succeeded", "failed", "cancelled"):
            break
        assert time.monotonic() < deadline, f"still {operation.status.value}"
    assert operation.status == models.OperationStatus.SUCCEEDED, operation.to_dict()
    assert operation.id == op_id and operation.kind == "network.create"
    assert all(step.phase.value == "succeeded" for step in operation.steps)

    network = get_network.sync_detailed(name=name, client=operator)
    assert network.status_code == 200
    assert isinstance(network.parsed, models.Network) and network.parsed.name == name

    # refusals parse into the envelope's model, with the API's code
    exists = create_network.sync_detailed(client=operator, body=models.NetworkCreate(name=name),
                                          idempotency_key=f"{key}-again")
    assert exists.status_code == 409
    assert isinstance(exists.parsed, models.Error) and exists.parsed.error.code == "conflict"
    viewer = package.AuthenticatedClient(base_url=stack.url, token=stack.viewer_token)
    forbidden = create_network.sync_detailed(client=viewer,
                                             body=models.NetworkCreate(name=f"{name}-v"))
    assert forbidden.status_code == 403
    assert isinstance(forbidden.parsed, models.Error)
    assert forbidden.parsed.error.code == "forbidden"
