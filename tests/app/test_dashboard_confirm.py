"""The dashboard confirms a destructive action one way: static/js/confirm.js (the dialog that
names the target, shows the route's dry run and asks the name before a forced request). No
view builds its own danger dialog, inline confirm row or force checkbox, and no view sends a
DELETE itself. (The browser tests show the dialog at work: tests/e2e, `destroy_dialog`.)"""

from __future__ import annotations

import re
from pathlib import Path

JS = Path(__file__).resolve().parents[2] / "static" / "js"
CONFIRM = JS / "confirm.js"
# the other ways a view once asked: an armed button, a force box, a request of its own
OTHER_WAYS = {
    "inline confirm": re.compile(r"confirming|alertdialog"),
    "force checkbox": re.compile(r"usedBy\(|-force['`]"),
    "own DELETE": re.compile(r"method:\s*'DELETE'"),
}


def _views():
    return [p for p in JS.rglob("*.js") if p != CONFIRM]


def test_no_view_confirms_a_destructive_action_its_own_way():
    found = [f"{p.relative_to(JS)}:{n}: {what}: {line.strip()}"
             for p in _views()
             for n, line in enumerate(p.read_text().splitlines(), 1)
             for what, pattern in OTHER_WAYS.items() if pattern.search(line)]
    assert not found, "confirm through confirm.js (confirmDestroy) only:\n" + "\n".join(found)


# The Kubernetes upgrade is a change, not a removal: it names no dependents and takes no force
# (its dry run rehearses the change), and its dialog says "no change" in place; it stays a
# modal of its own, styled as a danger because it cannot be undone.
OWN_DANGER_MODALS = {"capacity/software.js": 1}


def test_no_view_opens_a_danger_modal_of_its_own():
    found = {}
    for p in _views():
        text = p.read_text()
        calls = [m.start() for m in re.finditer(r"openModal\(\{", text)]
        danger = sum(1 for at in calls if re.search(r"danger:\s*true", text[at:at + 400]))
        if danger:
            found[str(p.relative_to(JS))] = danger
    assert found == OWN_DANGER_MODALS


def test_every_danger_button_opens_the_one_dialog():
    """Each module with a danger button (`btn-danger`) reaches confirmDestroy, itself or
    through the module it calls (a capacity view's dialogs live beside it)."""
    users = {p.name for p in _views() if "confirmDestroy(" in p.read_text()}
    assert {"clusters.js", "networks.js", "group_dialogs.js", "node_actions.js", "jobs.js",
            "jobs_mlflow.js", "models.js", "spaces.js", "endpoint_actions.js", "operation.js",
            "cluster_features.js"} <= users
    callers = {  # a module with a danger button → the module that holds its dialog
        "cluster.js": "clusters.js", "cluster_left.js": "clusters.js",
        "groups.js": "group_dialogs.js", "nodes.js": "node_actions.js",
        "node_detail.js": "node_actions.js", "endpoints.js": "endpoint_actions.js"}
    for p in _views():
        if "btn-danger" in p.read_text() and p.name != "modal.js":
            assert p.name in users or callers.get(p.name) in users, p.name
