"""No status, role, capacity type or identifier pattern is spelled outside the vocabulary
(issue 21): the tree is grepped, the dashboard's JavaScript included.

What counts as spelling a word, so that prose and other state machines do not trip it: an
operation status, step phase or stage status compared with a `status`/`phase` (`op["status"]
== "failed"`, `s.phase === 'applying'`, `status in ("failed", "cancelled")`,
`['succeeded', …].includes(op.status)`) or listed with another such word where one of them is
the vocabulary's alone (`("queued", "running")`); a role given to `access(…)`,
compared with a `role` or listed; a capacity type compared with a
`capacity_type` or given as its default; and a vocabulary pattern's own text
(its longest literal piece). Each rule is shown catching a planted sample below.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vocabulary import patterns
from vocabulary.capacity import CAPACITY_TYPES
from vocabulary.operations import OpStatus, StageStatus, StepPhase
from vocabulary.roles import PUBLIC, Role

REPO = Path(__file__).resolve().parent.parent
PRODUCT = ("app", "tasks", "cloud", "schemas", "mcp_server", "launcher", "static")

WORDS = sorted({*OpStatus, *StepPhase, *StageStatus}, key=len, reverse=True)
SHARED = {"running", "pending", "failed", "succeeded"}
"""Words other state machines use too (a job, a NAT gateway, an add-on, a pod): a list of
only these is theirs, not necessarily the vocabulary's."""
ROLES = sorted({*Role, PUBLIC}, key=len, reverse=True)

_W = "|".join(re.escape(w) for w in WORDS)
_R = "|".join(re.escape(r) for r in ROLES)
_TOKEN_ROLE = "|".join(re.escape(r) for r in Role)  # "public" is also a subnet's role
_Q = r"""["'`]"""
_SP = r"\b\w*(?:status|Status|phase|Phase)\b"  # status, op.status, opStatus, s.phase

WORD_RULES = [
    # x.status === 'failed', op["status"] != "succeeded"
    re.compile(rf"""{_SP}{_Q}?\]?\)?\s*(?:===?|!==?)\s*{_Q}(?:{_W}){_Q}"""),
    # 'failed' === x.status
    re.compile(rf"""{_Q}(?:{_W}){_Q}\s*(?:===?|!==?)\s*[\w.\[\]"'()]*?{_SP}"""),
    # op["status"] in ("failed", "cancelled")
    re.compile(rf"""{_SP}{_Q}?\]?\)?\s+(?:not\s+)?in\s+[(\[{{]\s*{_Q}(?:{_W}){_Q}"""),
    # ['succeeded', 'failed'].includes(op.status)
    re.compile(rf"""\[\s*{_Q}(?:{_W}){_Q}[^\]]*\]\.includes\("""),
]
_SEQUENCE = re.compile(
    rf"""[(\[{{]\s*((?:{_Q}(?:{_W}){_Q}\s*,\s*)+{_Q}(?:{_W}){_Q})\s*,?\s*[)\]}}]""")
_C = "|".join(re.escape(c) for c in CAPACITY_TYPES)
CAPACITY_RULES = [
    # body.capacity_type === 'training-plan', cap !== 'training-plan'
    re.compile(rf"""\b(?:capacity_type|cap)\b{_Q}?\]?\)?\s*(?:===?|!==?)\s*{_Q}(?:{_C}){_Q}"""),
    # capacity_type or "on-demand", g.capacity_type || 'on-demand'
    re.compile(rf"""capacity_type\b[^\n,;]*?(?:\bor\b|\|\|)\s*{_Q}(?:{_C}){_Q}"""),
]
ROLE_RULES = [
    re.compile(rf"""\baccess\(\s*{_Q}(?:{_R}){_Q}"""),
    re.compile(rf"""\brole\b{_Q}?\]?\)?\s*(?:===?|!==?)\s*{_Q}(?:{_TOKEN_ROLE}){_Q}"""),
    re.compile(rf"""[(\[{{]\s*{_Q}(?:{_R}){_Q}\s*,\s*{_Q}(?:{_R}){_Q}"""),
]


def _core(source: str) -> str:
    """A pattern's longest literal piece: anchors, the length look-ahead and `{m,n}` bounds
    taken out (a copy with other bounds still shares it)."""
    body = re.sub(r"\(\?=\.\{\d*,?\d*\}\$\)|\(\?:|\^|\$", "", source)
    return max(re.split(r"\{\d*,?\d*\}|\|", body), key=len).rstrip(")*+?")


PATTERN_TEXTS = {name: _core(value.pattern) for name, value in vars(patterns).items()
                 if isinstance(value, re.Pattern)}


def spelled(text: str) -> Iterator[str]:
    """What in `text` spells a word or a pattern the vocabulary holds."""
    for rule in (*WORD_RULES, *ROLE_RULES, *CAPACITY_RULES):
        for match in rule.finditer(text):
            yield match.group(0)
    for match in _SEQUENCE.finditer(text):
        listed = set(re.findall(rf"{_Q}({_W}){_Q}", match.group(1)))
        if listed - SHARED:
            yield match.group(0)
    for name, core in PATTERN_TEXTS.items():
        if core in text:
            yield f"{name}: {core}"


def _product_files() -> Iterator[Path]:
    for part in PRODUCT:
        for path in sorted((REPO / part).rglob("*")):
            if path.suffix in (".py", ".js") and "incluster" not in path.parts:
                yield path


def test_no_word_or_pattern_is_spelled_outside_the_vocabulary():
    found = [(str(path.relative_to(REPO)), hit) for path in _product_files()
             for hit in spelled(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_grep_reads_the_tree_it_judges():
    files = {str(p.relative_to(REPO)) for p in _product_files()}
    assert {"schemas/common.py", "static/js/rules.js", "static/js/views/operation.js",
            "mcp_server/server.py", "app/permissions.py"} <= files
    # the pieces it looks for are long enough to mean the pattern, not any text
    assert all(len(core) >= 10 for core in PATTERN_TEXTS.values()), PATTERN_TEXTS
    assert {"INSTANCE_GROUP_NAME", "ROLE_ARN", "SUBNET_ID", "SECURITY_GROUP_ID",
            "LABEL_KEY"} <= PATTERN_TEXTS.keys()


PLANTED = [
    'if op["status"] in ("queued", "running"):',
    "if (s.phase === 'applying') tick();",
    "const T = new Set(['succeeded', 'failed', 'cancelled']);",
    "if (['succeeded', 'failed'].includes(op.status)) done();",
    "if 'failed' == op['status']:",
    '@access("viewer")',
    "return session.user.role === 'operator';",
    'ROLES = ("viewer", "operator")',
    'SUBNET = re.compile(r"^subnet-[0-9a-f]{8,17}$")',
    'NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")',
    "ARN = r'^arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+$'",
    "  if (phases.has('failed')) return 'failed';\n  if (opStatus === 'cancelled') return x;",
    'if data.get("capacity_type") == "training-plan" and not plan:',
    "capacity_type: radioValue(capacityBox) || 'on-demand',",
    "badge(g.capacity_type || 'on-demand')",
]
PROSE = [
    '"""A cancelled operation keeps its steps; a failed one can be retried."""',
    'if nat.get("State") == "failed":',
    'if subnet["role"] == "public":',
    "if (s === 'running') return 'ok';  // a node's",
    "h('td', null, ep.service || 'operator'),",
    'TERMINAL_STATES = ("succeeded", "failed")  # a training job\'s',
    "if (view.state === 'failed') show();",
    'raise StepFailed("add-ons failed: " + "; ".join(state["failed"]))',
]


def test_the_grep_catches_each_planted_spelling_and_lets_prose_be():
    assert [s for s in PLANTED if not list(spelled(s))] == []
    assert {s: list(spelled(s)) for s in PROSE if list(spelled(s))} == {}
