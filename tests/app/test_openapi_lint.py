"""The OpenAPI document as a linter nobody here wrote reads it: Spectral's recommended OpenAPI
ruleset (`spectral:oas`), with no warning and no error.

Spectral (@stoplight/spectral-cli, pinned by tests/app/openapi_lint/package-lock.json and
installed by `./dev.sh test`, or `npm ci --prefix tests/app/openapi_lint`) lints the live
document, `GET /api/v1/openapi.json` of the running stack. The ruleset file extends
`spectral:oas` and changes nothing in it: no rule is turned off or down.

Before issue 22 it found 143 warnings: 70 operations without an operationId, 70 without a
description, no `servers`, no `info.contact`, and flask-smorest's unused
PaginationMetadata schema. app/openapi.py now completes every operation (name checked,
description, Idempotency headers, error replies in the envelope) and the document's own
fields.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

LINT = Path(__file__).resolve().parent / "openapi_lint"
SPECTRAL = LINT / "node_modules" / ".bin" / "spectral"
RULESET = LINT / ".spectral.yaml"
NODE = shutil.which("node")


def _spectral(tmp_path: Path, documents: dict[str, dict[str, Any]]) -> dict[str, list[dict]]:
    """Spectral's findings (code, severity, path, message) per document, in one run."""
    if NODE is None:
        pytest.fail("node is not installed: Spectral needs Node.js 18+ (./dev.sh test "
                    "installs it)")
    if not SPECTRAL.exists():
        pytest.fail(f"Spectral is not installed in {LINT}: run ./dev.sh test or "
                    f"npm ci --prefix {LINT}")
    paths = {}
    for name, document in documents.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(document))
    done = subprocess.run(
        [str(SPECTRAL), "lint", "--ruleset", str(RULESET), "--format", "json", "--quiet",
         "--fail-severity", "hint", *map(str, paths.values())],
        capture_output=True, text=True, timeout=120, cwd=LINT)
    assert done.stdout.strip(), f"Spectral said nothing: {done.stderr}"
    results = json.loads(done.stdout)
    found: dict[str, list[dict]] = {name: [] for name in documents}
    for result in results:
        name = next(n for n, p in paths.items() if Path(result["source"]).resolve() == p)
        found[name].append({k: result.get(k) for k in ("code", "severity", "path", "message")})
    return found


def test_the_ruleset_is_spectral_s_recommended_one_unchanged() -> None:
    assert RULESET.read_text().split() == ['extends:', '["spectral:oas"]']
    pinned = json.loads((LINT / "package.json").read_text())["dependencies"]
    assert list(pinned) == ["@stoplight/spectral-cli"]
    assert all(version[0].isdigit() for version in pinned.values()), "pinned exactly"


def test_the_live_document_passes_spectral_oas_with_no_warning(stack, tmp_path) -> None:
    with stack.client(token=None) as c:
        document = c.get("/api/v1/openapi.json").json()
    # the linter sees what it must: the same document with one operation unnamed and
    # undescribed is found wanting (so an empty verdict below is the linter's, not silence)
    unnamed = json.loads(json.dumps(document))
    operation = unnamed["paths"]["/api/v1/networks"]["post"]
    del operation["operationId"], operation["description"]
    found = _spectral(tmp_path, {"live": document, "unnamed": unnamed})
    assert {f["code"] for f in found["unnamed"]} == {"operation-operationId",
                                                       "operation-description"}
    assert found["live"] == [], "Spectral (spectral:oas) finds:\n" + "\n".join(
        f"{f['code']} ({f['severity']}) at {'.'.join(map(str, f['path']))}: {f['message']}"
        for f in found["live"])
