"""The diagnosis rules on what a gather could find (no AWS, Kubernetes or Redis): which
finding each node state gives, which node action follows, and the one order of suggestions.

Suggestions are REST calls; they are read here as the MCP server hands them to an agent
(`ROUTES.translate`: the tool its route maps to), so a route no tool calls fails here too."""

from __future__ import annotations

from typing import Any

from app.readmodels.diagnostics import Gathered
from app.readmodels.findings import EVIDENCE_SHOWN, diagnosis
from mcp_server.routemap import ROUTES
from schemas.diagnostics import STEPS, DiagnosisSchema


def _node(node_id: str, status: str = "Running", health: str | None = "Schedulable",
          ready: bool | None = True, message: str | None = None) -> dict[str, Any]:
    return {"id": node_id, "instance_group": "workers", "status": status, "message": message,
            "node_name": f"hyperpod-{node_id}", "ready": ready, "health": health,
            "unschedulable": False}


def _diagnose(kind: str, nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    found = Gathered("lab", [], hyperpod={"name": "lab", "status": "InService", "events": []},
                     nodes=nodes, **extra)
    out = diagnosis(found, kind)
    assert DiagnosisSchema().validate({"cluster": "lab", "kind": kind, "as_of": "now",
                                       "sources": [], **out}) == {}
    assert [s["step"] for s in out["suggestions"]] == sorted(
        (s["step"] for s in out["suggestions"]), key=STEPS.index)
    assert not any("tool" in s for s in out["suggestions"])  # the REST face names routes
    return ROUTES.translate(out)


def _actions(out: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(s["tool"], s["args"].get("node_ids") or s["args"].get("node_id"))
            for s in out["suggestions"]]


def test_each_node_state_gives_its_finding_and_remedy():
    out = _diagnose("node-health", [
        _node("i-01", status="Failure", health=None, ready=None, message="script missing"),
        _node("i-02", health="Unschedulable"),
        _node("i-03", ready=False),
        _node("i-04"),
        _node("i-05", status="Pending", health="UnschedulablePendingReboot"),
    ])
    by_node = {f["node_id"]: f for f in out["findings"]}
    assert set(by_node) == {"i-01", "i-02", "i-03", "i-05"}  # i-04 is healthy
    assert (by_node["i-01"]["code"], by_node["i-01"]["remedy"]) == ("node_failed", "replace")
    assert "script missing" in by_node["i-01"]["evidence"][0]["text"]
    assert (by_node["i-02"]["severity"], by_node["i-02"]["remedy"]) == ("warning", "none")
    assert (by_node["i-03"]["code"], by_node["i-03"]["remedy"]) == ("node_not_ready", "reboot")
    # investigate every node named; reboot only a Running one (i-05 is rebooting already);
    # replace the failed one, and the rebooted one only if it comes back
    assert _actions(out) == [
        ("get_node", "i-01"), ("get_node", "i-02"), ("get_node", "i-03"), ("get_node", "i-05"),
        ("reboot_nodes", ["i-03"]), ("replace_nodes", ["i-01", "i-03"])]
    assert "only if it comes back" in out["suggestions"][-1]["why"]


def test_a_warning_alone_suggests_reading_only():
    out = _diagnose("node-health", [_node("i-02", health="Unschedulable")])
    assert _actions(out) == [("get_node", "i-02")]
    assert not any(s["mutating"] for s in out["suggestions"])


def test_nccl_cites_at_most_a_few_lines_and_says_how_many_more():
    lines = [("trainer", f"[rank{i}] Watchdog caught collective operation timeout") for i in
             range(EVIDENCE_SHOWN + 3)]
    pods = [{"namespace": "train", "name": "p0", "node_name": "hyperpod-i-01",
             "phase": "Failed", "containers": [], "events": [], "lines": lines}]
    out = _diagnose("nccl", [_node("i-01")], pods=pods)
    [finding] = out["findings"]
    assert finding["code"] == "nccl-timeout" and finding["node_id"] == "i-01"
    assert len(finding["evidence"]) == EVIDENCE_SHOWN
    assert "3 more matching lines" in finding["message"]
    assert _actions(out)[1] == ("reboot_nodes", ["i-01"])


def test_nccl_reads_events_and_container_states_too():
    pods = [{"namespace": "train", "name": "p1", "node_name": "hyperpod-i-02",
             "phase": "Failed", "lines": [],
             "events": [{"reason": "BackOff", "message": "Back-off restarting", "at": None}],
             "containers": [{"container": "trainer", "phase": "terminated",
                             "reason": "OOMKilled", "exit_code": 137, "message": None}]}]
    out = _diagnose("nccl", [_node("i-02")], pods=pods)
    [finding] = out["findings"]
    assert (finding["code"], finding["remedy"]) == ("oom", "none")
    assert finding["evidence"][0] == {"source": "pod_status", "ref": "train/p1/trainer",
                                      "text": "OOMKilled (exit code 137)", "at": None}
    assert not any(s["mutating"] for s in out["suggestions"])  # the workload's size


def test_nothing_found_says_what_was_looked_at():
    out = _diagnose("node-health", [_node("i-04")])
    assert out["healthy"] is True and out["suggestions"] == []
    assert out["summary"].startswith("Nothing found: every node is Schedulable")


def test_node_health_reads_the_pattern_table_in_a_nodes_events():
    """HyperPod's agent reported a fatal Xid for a node it marked for a reboot: the node
    needs replacing, so no reboot is suggested."""
    event = {"id": "ev-1", "at": "2026-12-01T10:00:00Z", "level": "Error",
             "description": "NVRM: Xid (PCI:0000:53:00): 79, GPU has fallen off the bus."}
    out = _diagnose("node-health", [_node("i-07", health="UnschedulablePendingReboot")],
                    node_events={"i-07": [event]})
    codes = {(f["code"], f["remedy"]) for f in out["findings"]}
    assert codes == {("node_unhealthy", "reboot"), ("xid-fatal", "replace")}
    xid = next(f for f in out["findings"] if f["code"] == "xid-fatal")
    assert xid["evidence"] == [{"source": "hyperpod_event", "ref": "ev-1",
                                "text": event["description"], "at": event["at"]}]
    assert _actions(out) == [("get_node", "i-07"), ("replace_nodes", ["i-07"])]


def _op(kind: str, status: str, *phases: tuple[str, str, str]) -> dict[str, Any]:
    return {"id": f"op_{kind}_{status}", "kind": kind, "status": status, "target": "cluster/lab",
            "params": {"name": "lab"}, "error": None,
            "steps": [{"name": n, "stage": s, "phase": p, "detail": None, "resources": {}}
                      for n, s, p in phases]}


def _creation(life: list[dict[str, Any]]) -> dict[str, Any]:
    found = Gathered("lab", life, hyperpod=None, nodes=[])
    out = diagnosis(found, "creation")
    assert DiagnosisSchema().validate({"cluster": "lab", "kind": "creation", "as_of": "now",
                                       "sources": [], **out}) == {}
    assert not any("tool" in s for s in out["suggestions"])
    return ROUTES.translate(out)


def test_a_cancelled_create_is_never_healthy_and_points_at_both_ways_on():
    create = _op("cluster.create", "cancelled", ("vpc", "network", "succeeded"),
                 ("eks_cluster", "eks", "applied"), ("activate", "activate", "skipped"))
    out = _creation([create])
    assert out["healthy"] is False
    (finding,) = out["findings"]
    assert (finding["code"], finding["stage"], finding["severity"]) == (
        "cancelled_create", "eks", "warning")
    assert finding["title"] == "The create was cancelled at stage eks"
    assert "stays in AWS" in finding["message"]
    assert [(s["step"], s["tool"], s["args"]) for s in out["suggestions"]] == [
        ("investigate", "get_operation", {"operation_id": create["id"]}),
        ("investigate", "get_cluster", {"name": "lab"}),
        ("retry", "retry_operation", {"operation_id": create["id"]}),
        ("delete", "delete_cluster", {"name": "lab"})]


def test_a_create_left_unfinished_by_a_rerun_or_a_stopped_delete_is_not_healthy():
    create = _op("cluster.create", "failed", ("vpc", "network", "succeeded"),
                 ("eks_cluster", "eks", "failed"), ("activate", "activate", "pending"))
    rerun = _op("cluster.stage", "succeeded", ("eks_cluster", "eks", "succeeded"))
    out = _creation([rerun, create])
    assert [f["code"] for f in out["findings"]] == ["unfinished_create"]
    assert out["findings"][0]["stage"] == "activate"
    delete = _op("cluster.delete", "failed", ("hyperpod_cluster", "hyperpod", "failed"))
    out = _creation([delete, create])
    codes = [f["code"] for f in out["findings"]]
    assert "stopped_delete" in codes and out["healthy"] is False
    assert ("retry_operation", {"operation_id": delete["id"]}) in [
        (s["tool"], s["args"]) for s in out["suggestions"]]
    assert "delete_cluster" not in [s["tool"] for s in out["suggestions"]]
