"""The dashboard's rules (name rule, capacity types, stages, defaults) are the API's: read by
the browser from the OpenAPI document, not copied into the JavaScript."""

from __future__ import annotations

import re
import secrets

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from cloud.nodes import batch_size, request_limit
from schemas import endpoints
from schemas.clusters import KUBERNETES_VERSIONS, STAGES
from schemas.instance_groups import MAX_COUNT
from schemas.models import SOURCES
from schemas.nodes import HEALTH_VALUES, INSTANCE_STATUSES, MAX_PAGE, UNKNOWN_HEALTH
from tests.e2e.helpers import sign_in
from tests.stack import REPO
from vocabulary import kubernetes_versions
from vocabulary.capacity import CAPACITY_TYPES, EFA_MIN_INTERFACES, EFA_MODES, TAINT_EFFECTS
from vocabulary.operations import OpStatus, StageStatus, StepPhase
from vocabulary.roles import Role

pytestmark = pytest.mark.browser


def test_the_browser_reads_the_rules_from_the_api(page, stack):
    sign_in(page, stack, stack.operator_token, "operator")
    rules = page.evaluate("""async () => {
        const m = await import('/static/js/rules.js');
        const r = m.rules;
        return {capacity: r.capacityTypes, stages: r.stages, efa: r.efaModes,
                versions: r.kubernetesVersions, cidr: r.defaultCidr,
                support: r.kubernetesSupport,
                count: [r.instanceCount.min, r.instanceCount.max],
                good: r.name.re.test('lab-1'), trailing: r.name.re.test('lab-'),
                trailingWhy: m.validateName('lab-'),
                group: {capacity: r.group.capacityTypes, efa: r.group.efaModes,
                        count: [r.group.count.min, r.group.count.max],
                        threads: r.group.threadsPerCore, effects: r.group.taintEffects,
                        subnet: r.group.subnetId.test('subnet-0123456789abcdef0'),
                        key: r.group.labelKey.test('team.example.com/tier'),
                        badKey: r.group.labelKey.test('-x')},
                nodes: {health: r.nodes.health, statuses: r.nodes.statuses,
                        pageMax: r.nodes.pageMax, batch: r.nodes.batchSize,
                        most: r.nodes.maxPerAction},
                upgrade: r.upgradeVersions,
                endpoints: {kinds: r.endpoints.kinds, services: r.endpoints.services,
                            routing: r.endpoints.routingByKind,
                            gpus: [r.endpoints.gpus.min, r.endpoints.gpus.max],
                            tokens: r.endpoints.maxTokens.max, prompt: r.endpoints.promptMax},
                sources: r.downloads.sources, s3: r.downloads.s3Uri.test('s3://b-1/p/q'),
                words: {status: Object.values(r.status), finished: [...r.finished],
                        active: [...r.active], phase: Object.values(r.phase),
                        done: [...r.phaseDone], inFlight: [...r.phaseInFlight],
                        stage: Object.values(r.stage), role: Object.values(r.role),
                        notRun: r.stage.NOT_RUN, efa: r.efaMinInterfaces,
                        groupEfa: r.group.efaMinInterfaces,
                        unknown: (() => { try { return r.status.NOPE; }
                                          catch (e) { return e.message; } })()}};
    }""")
    assert rules["capacity"] == list(CAPACITY_TYPES)
    assert rules["stages"] == list(STAGES)
    assert rules["efa"] == list(EFA_MODES)
    assert rules["versions"] == list(KUBERNETES_VERSIONS)
    assert rules["support"] == {v: kubernetes_versions.support_of(v) for v in KUBERNETES_VERSIONS}
    assert rules["cidr"] == "10.0.0.0/16"
    assert rules["count"] == [1, 500]
    assert rules["good"] is True and rules["trailing"] is False
    assert "hyphen" in rules["trailingWhy"]
    assert rules["group"] == {
        "capacity": list(CAPACITY_TYPES), "efa": list(EFA_MODES), "count": [1, MAX_COUNT],
        "threads": [1, 2], "effects": list(TAINT_EFFECTS), "subnet": True, "key": True,
        "badKey": False}
    assert rules["nodes"] == {
        "health": [*HEALTH_VALUES, UNKNOWN_HEALTH], "statuses": list(INSTANCE_STATUSES),
        "pageMax": MAX_PAGE, "batch": batch_size(), "most": request_limit()}
    assert rules["upgrade"] == list(KUBERNETES_VERSIONS)
    assert rules["endpoints"] == {
        "kinds": list(endpoints.KINDS), "services": list(endpoints.SERVICES),
        "routing": {"managed": list(endpoints.MANAGED_ROUTING),
                    "sglang": list(endpoints.ROUTER_POLICIES)},
        "gpus": [1, endpoints.MAX_GPUS], "tokens": endpoints.MAX_TOKENS,
        "prompt": endpoints.MAX_PROMPT}
    assert rules["sources"] == list(SOURCES) and rules["s3"] is True
    assert rules["words"] == {
        "status": list(OpStatus), "finished": [s for s in OpStatus if s.is_finished],
        "active": [s for s in OpStatus if s.is_active], "phase": list(StepPhase),
        "done": [p for p in StepPhase if p.is_done],
        "inFlight": [p for p in StepPhase if p in StepPhase.in_flight()],
        "stage": list(StageStatus), "role": list(Role), "notRun": "not_run",
        "efa": EFA_MIN_INTERFACES, "groupEfa": EFA_MIN_INTERFACES,
        "unknown": "the API has no word NOPE"}


def test_the_network_form_refuses_a_trailing_hyphen_before_sending(page, stack):
    sign_in(page, stack, stack.operator_token, "operator")
    page.goto(stack.url + "/#/networks")
    page.get_by_test_id("network-name").fill("lab-")
    page.get_by_test_id("network-name").blur()
    expect(page.get_by_test_id("error-network-name")).to_contain_text("hyphen")
    expect(page.get_by_test_id("network-cidr")).to_have_value("10.0.0.0/16")
    # the CIDR's default and allowed range are shown before any submit (the document's)
    expect(page.get_by_test_id("network-cidr-hint")).to_contain_text("Default 10.0.0.0/16")
    expect(page.get_by_test_id("network-cidr-hint")).to_contain_text("/16 to /18")
    # a CIDR the API refuses is said once, on its field (not also on the form and a toast)
    page.get_by_test_id("network-name").fill(f"lab-{secrets.token_hex(3)}")
    page.get_by_test_id("network-cidr").fill("10.0.0.0/20")
    with page.expect_response(lambda r: r.request.method == "POST"
                              and r.url.split("?")[0].endswith("/api/v1/networks")) as refused:
        page.get_by_test_id("network-create").click()
    assert refused.value.status == 422
    expect(page.get_by_test_id("error-network-cidr")).to_contain_text("prefix must be /16 to /18")
    expect(page.get_by_test_id("network-cidr")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_text("prefix must be /16 to /18")).to_have_count(1)
    expect(page.get_by_test_id("network-form-error")).to_be_empty()


def test_no_rule_is_copied_into_the_javascript():
    """The values the API owns do not appear as literals in the dashboard's code."""
    sources = {p.name: p.read_text() for p in (REPO / "static" / "js").rglob("*.js")}
    copies = {
        "the stage list": re.compile(r"'network',\s*'eks'"),
        "the default CIDR": re.compile(r"10\.0\.0\.0/16"),
        "the name pattern": re.compile(r"\[a-z0-9-\]\{0,3[01]\}"),
        "the instance count bound": re.compile(r"1\s*[\u2013-]\s*500|max:\s*500|> 500"),
        "the VPC id pattern": re.compile(r"vpc-\[0-9a-f\]"),
        "the node batch size": re.compile(r"\b25\b"),
        "the health values": re.compile(r"'Schedulable',\s*'Unschedulable"),
        "the node statuses": re.compile(r"'Running',\s*'Failure'"),
        "the taint effects": re.compile(r"'NoSchedule',\s*'PreferNoSchedule'"),
        "the upgrade versions": re.compile(r"'1\.3\d'"),
    }
    found = [(name, what) for name, text in sources.items() for what, rx in copies.items()
             if rx.search(text)]
    assert not found, found
