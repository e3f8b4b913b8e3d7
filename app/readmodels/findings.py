"""The rules of a diagnosis: what is gathered (app/readmodels/diagnostics.py) becomes
findings, each citing its evidence, and suggestions — REST calls (app/readmodels/calls.py;
the MCP server names their tools) and kubectl commands that hypd never runs — ordered
investigate → reboot → replace → retry, the escalation the node actions (and
skills/node-health.md) follow.

Pure functions of what was read: no AWS, Kubernetes or Redis here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from app.readmodels import calls, lifecycle
from cloud import failure_patterns
from cloud.nodes import HEALTH_LABEL
from schemas.diagnostics import STEPS
from vocabulary.operations import StageStatus, StepPhase

FAILURE = "Failure"
RUNNING = "Running"
PENDING_REBOOT = "UnschedulablePendingReboot"
PENDING_REPLACEMENT = "UnschedulablePendingReplacement"
UNSCHEDULABLE = "Unschedulable"
EVIDENCE_SHOWN = 5
"""Log lines or events cited per finding (the count of the rest is said)."""
HARDNESS = ("none", "reboot", "replace")


def node_suspect(node: dict[str, Any]) -> bool:
    """Whether a node (cloud.nodes.join's view) looks unhealthy and is worth reading on."""
    return (node.get("status") == FAILURE
            or node.get("health") in (PENDING_REBOOT, PENDING_REPLACEMENT, UNSCHEDULABLE)
            or (node.get("status") == RUNNING and node.get("ready") is False))


def _finding(code: str, severity: str, title: str, message: str, evidence: list[dict],
             remedy: str, node_id: str | None = None, stage: str | None = None) -> dict:
    return {"code": code, "severity": severity, "title": title, "message": message,
            "node_id": node_id, "stage": stage, "remedy": remedy, "evidence": evidence}


def _evidence(source: str, ref: str, text: str, at: str | None = None) -> dict[str, Any]:
    return {"source": source, "ref": ref, "text": text, "at": at}


def _event_evidence(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_evidence("hyperpod_event", e.get("id") or "event",
                      f"{e.get('level') or 'Info'}: {e.get('description')}", e.get("at"))
            for e in list(events)[:EVIDENCE_SHOWN]]


# -- creation ----------------------------------------------------------------------------------

def _failed_stages(life: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {op["id"]: op for op in life}
    found = []
    for stage in lifecycle.stage_view(life):
        if stage["status"] != StageStatus.FAILED:
            continue
        op = by_id[stage["operation_id"]]
        error = op.get("error") or {}
        evidence = [_evidence("operation", f"{op['id']} step {s['name']}",
                              s.get("detail") or error.get("message") or "failed")
                    for s in stage["steps"] if s["phase"] == StepPhase.FAILED]
        if error.get("message") and all(error["message"] != e["text"] for e in evidence):
            evidence.append(_evidence("operation", f"{op['id']} error {error.get('code')}",
                                      error["message"], op.get("updated_at")))
        found.append(_finding(
            "stage_failed", "error", f"Stage {stage['name']} failed",
            f"The {stage['name']} stage of {op['kind']} {op['id']} failed. Fix the cause it "
            "names, then re-run the stage: it adopts what exists and creates only what is "
            "missing.", evidence, "retry", stage=stage["name"]))
    return found


STOPPED = {
    lifecycle.CREATE_CANCELLED: ("cancelled_create", "The create was cancelled"),
    lifecycle.STAGE_CANCELLED: ("cancelled_create", "The stage re-run was cancelled"),
    lifecycle.INCOMPLETE: ("unfinished_create", "The create never finished"),
    lifecycle.DELETE_FAILED: ("stopped_delete", "The delete failed"),
    lifecycle.DELETE_CANCELLED: ("stopped_delete", "The delete was cancelled"),
}
"""States a failed stage does not already say (lifecycle.state): the cluster is not whole,
and what was made stays in AWS, billed, until it is resumed or deleted."""


def _stopped(life: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A create, re-run or delete that stopped short without a failed stage of its own to
    show for it: never healthy. Its evidence names the operation a resume retries."""
    now = lifecycle.state(life, lifecycle.stage_view(life))
    if now["status"] not in STOPPED:
        return []
    code, title = STOPPED[now["status"]]
    op = lifecycle.resumable(life) or {"id": now["operation_id"], "status": now["status"]}
    evidence = [_evidence("operation", f"{op['id']} {op['status']}", now["summary"])]
    deleting = code == "stopped_delete"
    message = (f"{now['summary'][0].upper()}{now['summary'][1:]}. What it made stays in AWS, "
               "and what of it is billed by the hour keeps costing: the cluster's read lists it "
               "with its hourly cost. "
               + ("Resume the delete to finish it." if deleting else
                  "Resume it (it carries on from where it stopped) or delete what was made."))
    return [_finding(code, "error" if deleting else "warning",
                     f"{title}" + (f" at stage {now['stage']}" if now["stage"] else ""),
                     message, evidence, "retry", stage=now["stage"])]


def _creation(found: Any) -> list[dict[str, Any]]:
    out = _failed_stages(found.life) + _stopped(found.life)
    described = found.hyperpod or {}
    errors = [e for e in described.get("events") or () if (e.get("level") or "") == "Error"]
    if described.get("status") == "Failed" or (errors and not out):
        status = _evidence("hyperpod_cluster", described.get("name") or found.cluster,
                           f"status {described.get('status')}: "
                           f"{described.get('failure_message') or 'no message'}")
        evidence = [status, *_event_evidence(errors)]
        out.append(_finding("cluster_failed", "error", "The HyperPod cluster reports errors",
                            "HyperPod could not bring the cluster up as asked; its message "
                            "and events name the cause.", evidence, "none"))
    out += [f for f in _node_findings(found) if f["code"] == "node_failed"]
    return out


# -- node health -------------------------------------------------------------------------------

def _node_finding(node: dict[str, Any], events: list[dict[str, Any]],
                  conditions: list[dict[str, Any]]) -> dict[str, Any] | None:
    node_id, health = node["id"], node.get("health")
    label = _evidence("node_label", node.get("node_name") or node_id,
                      f"{HEALTH_LABEL}={health}") if health else None
    cited = _event_evidence(events) + [
        _evidence("node_condition", node.get("node_name") or node_id,
                  f"{c.get('type')}={c.get('status')}: {c.get('reason') or ''} "
                  f"{c.get('message') or ''}".strip(), c.get("lastTransitionTime"))
        for c in conditions]
    if node.get("status") == FAILURE:
        message = node.get("message") or "no message"
        return _finding("node_failed", "error", f"Node {node_id} is in Failure",
                        f"HyperPod reports the instance failed: {message}. A failed node "
                        "does not come back by itself; replace it.",
                        [_evidence("hyperpod_node", node_id, f"status {FAILURE}: {message}"),
                         *cited], "replace", node_id)
    if health == PENDING_REPLACEMENT:
        return _finding("node_unhealthy", "error", f"Node {node_id} needs replacing",
                        "HyperPod's health monitoring marked the node for replacement "
                        "(a hardware fault it cannot clear with a reboot).",
                        [label, *cited], "replace", node_id)
    if health == PENDING_REBOOT:
        return _finding("node_unhealthy", "error", f"Node {node_id} needs a reboot",
                        "HyperPod's health monitoring marked the node for a reboot (a fault "
                        "a reboot usually clears: a hung GPU, an EFA device).",
                        [label, *cited], "reboot", node_id)
    if node.get("status") == RUNNING and node.get("ready") is False:
        return _finding("node_not_ready", "error", f"Node {node_id} is not Ready",
                        "The instance runs but its kubelet does not report Ready: pods are "
                        "not scheduled on it.",
                        [_evidence("hyperpod_node", node_id, f"status {RUNNING}"), *cited],
                        "reboot", node_id)
    if health == UNSCHEDULABLE:
        return _finding("node_unhealthy", "warning", f"Node {node_id} is unschedulable",
                        "The node takes no work: deep health checks run on it, or the health "
                        "agent holds it. Wait for the checks, then look again.",
                        [label, *cited], "none", node_id)
    return None


def _node_findings(found: Any, only: set[str] | None = None) -> list[dict[str, Any]]:
    """Each unhealthy node's finding, then what its HyperPod events and Node conditions
    show of the failure pattern table (a Xid the health agent reported, say)."""
    out, seen = [], []
    for node in found.nodes:
        if only is not None and node["id"] not in only:
            continue
        events = found.node_events.get(node["id"], [])
        conditions = found.conditions.get(node["id"], [])
        finding = _node_finding(node, events, conditions)
        if finding:
            out.append(finding)
        seen += [(e.get("description") or "", node["id"],
                  _evidence("hyperpod_event", e.get("id") or "event",
                            e.get("description") or "", e.get("at"))) for e in events]
        seen += [(c.get("message") or "", node["id"],
                  _evidence("node_condition", node.get("node_name") or node["id"],
                            c.get("message") or "", c.get("lastTransitionTime")))
                 for c in conditions]
    return out + _matched(seen, "node-health")


def _matched(seen: list[tuple[str, str | None, dict[str, Any]]], kind: str
             ) -> list[dict[str, Any]]:
    """One finding per (failure pattern, node) among (text, node id, evidence) triples,
    citing at most EVIDENCE_SHOWN of its matches."""
    grouped: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for text, node_id, evidence in seen:
        pattern = failure_patterns.match(text, kind)
        if pattern:
            grouped.setdefault((pattern.id, node_id), []).append(evidence)
    by_id = {p.id: p for p in failure_patterns.patterns()}
    out = []
    for (pattern_id, node_id), evidence in grouped.items():
        pattern = by_id[pattern_id]
        more = len(evidence) - EVIDENCE_SHOWN
        where = f" on node {node_id}" if node_id else ""
        message = pattern.meaning + (f" ({more} more matching lines not shown.)"
                                     if more > 0 else "")
        out.append(_finding(pattern.id, pattern.severity, pattern.title + where, message,
                            evidence[:EVIDENCE_SHOWN], pattern.remedy, node_id))
    return out


# -- nccl --------------------------------------------------------------------------------------

def _pod_texts(found: Any) -> list[tuple[str, str | None, dict[str, Any]]]:
    """Every log line, warning event and container state of the pods read, with the node
    each pod ran on."""
    node_of = {n.get("node_name"): n["id"] for n in found.nodes if n.get("node_name")}
    seen: list[tuple[str, str | None, dict[str, Any]]] = []
    for pod in found.pods:
        where, node_id = f"{pod['namespace']}/{pod['name']}", node_of.get(pod["node_name"])
        for container, line in pod["lines"]:
            seen.append((line, node_id, _evidence("pod_log", f"{where}/{container}", line)))
        for event in pod["events"]:
            text = f"{event.get('reason')}: {event.get('message')}"
            seen.append((text, node_id, _evidence("pod_event", where, text, event.get("at"))))
        for state in pod["containers"]:
            text = (f"{state['reason']} (exit code {state['exit_code']})"
                    if state.get("exit_code") is not None else state["reason"])
            seen.append((text, node_id,
                         _evidence("pod_status", f"{where}/{state['container']}", text)))
    return seen


def _nccl(found: Any) -> list[dict[str, Any]]:
    out = _matched(_pod_texts(found), "nccl")
    involved = {f["node_id"] for f in out if f["node_id"]}
    codes = {(f["code"], f["node_id"]) for f in out}
    return out + [f for f in _node_findings(found, involved)
                  if (f["code"], f["node_id"]) not in codes]


# -- suggestions -------------------------------------------------------------------------------

def _call(step: str, title: str, why: str, route: calls.Route, args: dict[str, Any],
          body: dict[str, Any] | None = None, kubectl: list[str] | None = None
          ) -> dict[str, Any]:
    return {"step": step, "title": title, "why": why, **calls.call(route, args, body),
            "kubectl": kubectl}


def _ways_on(cluster: str, finding: dict[str, Any]) -> list[dict[str, Any]]:
    """Read what is left and its cost, then resume (retry the operation that stopped) or
    delete what was made — the cluster read's own next actions."""
    op_id = finding["evidence"][0]["ref"].split()[0]
    out = [_call("investigate", f"Read cluster {cluster}: what is left in AWS and its hourly "
                 "cost", finding["title"], calls.CLUSTER, {"name": cluster}),
           _call("retry", f"Resume operation {op_id}", "it carries on from the step it "
                 "stopped at; confirm with the user", calls.RETRY_OPERATION,
                 {"operation_id": op_id})]
    if finding["code"] != "stopped_delete":
        out.append(_call("delete", f"Delete what cluster {cluster}'s create made",
                         "the other way on; confirm with the user", calls.DELETE_CLUSTER,
                         {"name": cluster}))
    return out


def _hardest(remedies: Iterable[str]) -> str:
    return max(remedies, key=HARDNESS.index, default="none")


def suggestions(cluster: str, findings: list[dict[str, Any]], nodes: list[dict[str, Any]]
                ) -> list[dict[str, Any]]:
    by_id = {n["id"]: n for n in nodes}
    out: list[dict[str, Any]] = []
    for finding in findings:
        for e in finding["evidence"]:
            if e["source"] == "operation" and finding["stage"]:
                op_id = e["ref"].split()[0]
                out.append(_call("investigate", f"Read operation {op_id}",
                                 finding["title"], calls.OPERATION, {"operation_id": op_id}))
                break
        if finding["code"] == "cluster_failed":
            out.append(_call("investigate", "Read the cluster and its HyperPod events",
                             finding["title"], calls.CLUSTER, {"name": cluster}))
    remedy: dict[str, str] = {}
    why: dict[str, list[str]] = {}
    for finding in findings:
        if finding["node_id"]:
            node_id = finding["node_id"]
            remedy[node_id] = _hardest((remedy.get(node_id, "none"), finding["remedy"]))
            why.setdefault(node_id, []).append(finding["title"])
    for node_id in sorted(remedy):
        name = (by_id.get(node_id) or {}).get("node_name")
        out.append(_call("investigate", f"Read node {node_id}: status, conditions, events, "
                         "the pods a node action would disrupt", "; ".join(why[node_id]),
                         calls.NODE, {"cluster": cluster, "node_id": node_id},
                         kubectl=["kubectl", "describe", "node", name] if name else None))
    reboot = sorted(n for n, r in remedy.items() if r == "reboot"
                    and (by_id.get(n) or {}).get("status") == RUNNING)
    replace = sorted(n for n, r in remedy.items() if r == "replace")
    if reboot:
        out.append(_call("reboot", f"Reboot {', '.join(reboot)}",
                         "a reboot usually clears this; confirm with the user and name the "
                         "pods the node's read lists", calls.REBOOT_NODES, {"cluster": cluster},
                         {"node_ids": reboot}))
    if replace or reboot:
        ids = sorted({*replace, *reboot})
        why_replace = ("the fault is one a reboot does not clear" if replace else "")
        if reboot:
            why_replace += ("; " if why_replace else "") + (
                f"only if it comes back after the reboot: {', '.join(reboot)}")
        out.append(_call("replace", f"Replace {', '.join(ids)}", why_replace,
                         calls.REPLACE_NODES, {"cluster": cluster}, {"node_ids": ids}))
    for finding in findings:
        if finding["code"] == "stage_failed":
            out.append(_call("retry", f"Re-run stage {finding['stage']}",
                             "once the cause it names is fixed", calls.RUN_STAGE,
                             {"name": cluster, "stage": finding["stage"]}))
        if finding["code"] in ("cancelled_create", "unfinished_create", "stopped_delete"):
            out += _ways_on(cluster, finding)
    return sorted(out, key=lambda s: STEPS.index(s["step"]))


RULES = {"creation": _creation, "node-health": _node_findings, "nccl": _nccl}
NOTHING = {
    "creation": "no failed, cancelled or unfinished stage, HyperPod reports no failure and "
                "no node is in Failure",
    "node-health": "every node is Schedulable and Ready, none in Failure",
    "nccl": "no NCCL, EFA, Xid or out-of-memory error in the pods' logs, events or states",
}


def diagnosis(found: Any, kind: str) -> dict[str, Any]:
    """{healthy, summary, findings, suggestions} for what `found` holds."""
    found_now = RULES[kind](found)
    errors = sum(f["severity"] == "error" for f in found_now)
    summary = (f"{len(found_now)} finding(s), {errors} error(s): "
               + "; ".join(f["title"] for f in found_now)) if found_now else \
        "Nothing found: " + NOTHING[kind] + "."
    return {"healthy": not found_now, "summary": summary, "findings": found_now,
            "suggestions": suggestions(found.cluster, found_now, found.nodes)}
