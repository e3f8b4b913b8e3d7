"""The arithmetic of a team's cost (app/readmodels/team_usage.py): an admitted Workload's
share of nodes is each pod set's dominant share on its flavor's instance type, and an
interval costs share x price x its overlap with the period."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.readmodels.team_usage import (
    entries_of,
    flavor_types,
    overlap_hours,
    shares,
    spend,
)
from cloud.fit import GIB
from tasks.team_ledger import Entry

NODE = {"ml.g5.8xlarge": {"cpu": 32.0, "memory": 128 * GIB, "nvidia.com/gpu": 1.0,
                          "vpc.amazonaws.com/efa": 1.0, "aws.amazon.com/neuron": 0.0},
        "ml.c5.large": {"cpu": 2.0, "memory": 4 * GIB, "nvidia.com/gpu": 0.0}}
FLAVORS = flavor_types([
    {"metadata": {"name": "gpu-flavor"},
     "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": "ml.g5.8xlarge"}}},
    {"metadata": {"name": "ml.c5.large"}, "spec": {}},
])


def _workload(pod_sets: list[dict], namespace: str = "hyperpod-ns-vision",
              admitted: str | None = "2026-12-01T10:00:00Z", finished: str | None = None,
              uid: str = "u1") -> dict:
    conditions = []
    if admitted:
        conditions.append({"type": "Admitted", "status": "True",
                           "lastTransitionTime": admitted})
    if finished:
        conditions.append({"type": "Finished", "status": "True",
                           "lastTransitionTime": finished})
    status: dict = {"conditions": conditions}
    if admitted:
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": pod_sets}
    return {"metadata": {"name": "job-x", "namespace": namespace, "uid": uid},
            "status": status}


def _pod_set(count: int, flavor: str, **usage: str) -> dict:
    usage = {k.replace("_", "/").replace("nvidia/com", "nvidia.com"): v
             for k, v in usage.items()}
    return {"name": "main", "count": count, "flavors": dict.fromkeys(usage, flavor),
            "resourceUsage": usage}


def test_a_flavor_s_instance_type_is_its_node_label_else_its_name():
    assert FLAVORS == {"gpu-flavor": "ml.g5.8xlarge", "ml.c5.large": "ml.c5.large"}


def test_the_share_is_the_dominant_resource_of_each_pod_set():
    # 4 pods, each 2 vCPUs of 32 (1/16) and 64 GiB of 128 (1/2): memory dominates, 4 x 1/2
    wl = _workload([_pod_set(4, "gpu-flavor", cpu="8", memory="256Gi")])
    assert shares(wl, FLAVORS, NODE.get) == {"ml.g5.8xlarge": pytest.approx(2.0)}
    # one GPU of one dominates 500m of 32 vCPUs; a second pod set on another type adds its own
    wl = _workload([_pod_set(1, "gpu-flavor", cpu="500m", nvidia_com_gpu="1"),
                    _pod_set(3, "ml.c5.large", cpu="3", memory="1Gi")])
    assert shares(wl, FLAVORS, NODE.get) == {"ml.g5.8xlarge": pytest.approx(1.0),
                                             "ml.c5.large": pytest.approx(1.5)}
    # two pod sets on one type add up (resourceUsage is the pod set's total: 2 x 16 vCPUs)
    wl = _workload([_pod_set(1, "gpu-flavor", cpu="16"), _pod_set(2, "gpu-flavor", cpu="32")])
    assert shares(wl, FLAVORS, NODE.get) == {"ml.g5.8xlarge": pytest.approx(1.5)}


def test_a_type_ec2_does_not_describe_has_no_share():
    wl = _workload([_pod_set(1, "ml.x9.huge", cpu="1")])
    assert shares(wl, FLAVORS, NODE.get) == {"ml.x9.huge": None}
    assert entries_of([wl], FLAVORS, NODE.get, "2026-12-01T11:00:00Z") == []


def test_entries_are_the_admitted_work_of_teams_namespaces_until_now_or_its_finish():
    now = "2026-12-01T12:00:00Z"
    running = _workload([_pod_set(1, "gpu-flavor", cpu="16")], uid="run")
    done = _workload([_pod_set(1, "gpu-flavor", cpu="32")], uid="done",
                     finished="2026-12-01T11:00:00Z")
    waiting = _workload([], admitted=None, uid="wait")
    elsewhere = _workload([_pod_set(1, "gpu-flavor", cpu="16")], namespace="default",
                          uid="other")
    found = {e.uid: e for e in entries_of([running, done, waiting, elsewhere], FLAVORS,
                                          NODE.get, now)}
    assert set(found) == {"run", "done"}
    assert found["run"] == Entry("run", "2026-12-01T10:00:00Z", "vision", "ml.g5.8xlarge",
                                 0.5, now)
    assert (found["done"].share, found["done"].seen_at) == (1.0, "2026-12-01T11:00:00Z")
    assert found["run"].key != Entry("run", "2026-12-01T11:30:00Z", "vision",
                                     "ml.g5.8xlarge", 0.5, now).key  # re-admitted: anew


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_an_interval_counts_only_its_overlap_with_the_period():
    lo, hi = _at("2026-12-02T00:00"), _at("2026-12-03T00:00")
    assert overlap_hours(_at("2026-12-01T22:00"), _at("2026-12-02T03:00"), lo, hi) == 3
    assert overlap_hours(_at("2026-12-02T22:00"), _at("2026-12-03T05:00"), lo, hi) == 2
    assert overlap_hours(_at("2026-12-01T01:00"), _at("2026-12-01T05:00"), lo, hi) == 0
    assert overlap_hours(_at("2026-12-01T00:00"), _at("2026-12-04T00:00"), lo, hi) == 24


def test_spend_is_share_times_price_times_hours_and_says_what_had_no_price():
    entries = [Entry("a", "2026-12-01T10:00:00Z", "vision", "ml.g5.8xlarge", 0.5,
                     "2026-12-01T14:00:00Z"),
               Entry("b", "2026-11-30T22:00:00Z", "vision", "ml.g5.8xlarge", 1.0,
                     "2026-12-01T01:00:00Z")]
    month = (_at("2026-12-01T00:00"), _at("2026-12-01T20:00"))
    got = spend(entries, {"ml.g5.8xlarge": 3.06}, *month)
    # 0.5 x 4 h + 1.0 x 1 h (the hours before the first are not this month's)
    assert got == {"usd": pytest.approx(3 * 3.06), "node_hours": 3.0, "complete": True}
    unpriced = spend(entries, {"ml.g5.8xlarge": None}, *month)
    assert unpriced == {"usd": 0.0, "node_hours": 3.0, "complete": False}
    assert spend([], {}, *month) == {"usd": 0.0, "node_hours": 0.0, "complete": True}
