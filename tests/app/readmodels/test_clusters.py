"""app/readmodels/clusters.py: the one `find` and its rules — imported, made by hypd (EKS
tags), being made (operations, no EKS yet), and not found once deleted or when the EKS
cluster of that name is someone else's."""

from __future__ import annotations

import pytest

from app.errors import ApiError
from app.readmodels import clusters as readmodel
from tasks import registry

OURS = {"hypd:managed-by": "hypd", "hypd:cluster": "lab"}


def _not_found(name: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        readmodel.find(name)
    assert caught.value.status == 404 and caught.value.code == "not_found"
    return caught.value


def test_a_cluster_hypd_made_is_found_by_its_eks_tags(app_ctx, aws_eks):
    aws_eks.add("lab", OURS)
    found = readmodel.find("lab")
    assert found.ours and not found.imported and found.eks["status"] == "ACTIVE"
    assert found.region == "us-west-2" and found.life == ()


def test_a_create_still_running_or_failed_before_eks_existed_is_found(app_ctx, aws_eks, store):
    store.add("cluster.create", "lab", status="running")
    assert readmodel.find("lab").eks is None
    store.ops[-1]["status"] = "failed"
    assert readmodel.find("lab").last_create["id"] == "op_000"


def test_a_deleted_cluster_is_not_found_and_a_new_create_finds_it_again(app_ctx, aws_eks, store):
    store.add("cluster.create", "lab")
    store.add("cluster.stage", "lab")
    store.add("cluster.delete", "lab", status="running")
    assert readmodel.find("lab").life[0]["kind"] == "cluster.delete"  # still being deleted
    store.ops[-1]["status"] = "failed"
    assert readmodel.find("lab")  # a failed delete can be retried
    store.ops[-1]["status"] = "succeeded"
    assert "no cluster named 'lab'" in _not_found("lab").message
    assert readmodel.last_create("lab") is None
    again = store.add("cluster.create", "lab", status="queued")
    assert [op["id"] for op in readmodel.find("lab").life] == [again["id"]]


def test_an_eks_cluster_hypd_did_not_make_is_not_found(app_ctx, aws_eks, store):
    aws_eks.add("lab", {"team": "ml"})
    store.add("cluster.create", "lab", status="failed")  # e.g. it took the name meanwhile
    seen = readmodel.locate("lab")
    assert seen.foreign and not seen.known
    assert "not created by hypd" in _not_found("lab").message
    aws_eks.add("lab", {"hypd:managed-by": "hypd", "hypd:cluster": "other"})
    assert readmodel.locate("lab").foreign


def test_an_imported_cluster_is_found_in_its_own_region(app_ctx, aws_eks, redis_db):
    registry.remember(redis_db, "outside", "eu-west-1", "hp-outside", "operator")
    aws_eks.add("outside", {"team": "ml"}, region="eu-west-1")
    found = readmodel.find("outside")
    assert found.imported and not found.foreign and found.region == "eu-west-1"
    assert found.eks["name"] == "outside" and found.hyperpod_name == "hp-outside"
    aws_eks.clusters.clear()  # gone from AWS: still imported until forgotten
    assert readmodel.find("outside").eks is None


def test_the_region_is_the_one_the_operations_act_in(app_ctx, aws_eks, store):
    store.add("cluster.create", "lab", region="us-east-1")
    aws_eks.add("lab", OURS, region="us-east-1")
    assert readmodel.region_of("lab") == "us-east-1"
    assert readmodel.find("lab").ours
    assert readmodel.region_of("nothing") == "us-west-2"  # the panel's


def test_names_eks_would_refuse_are_not_asked_about(app_ctx, aws_eks):
    for name in ("-x", "a" * 101, "a.b", "ünïcode"):
        _not_found(name)
    assert aws_eks.calls == []


def test_summary_and_the_list_shape(app_ctx, monkeypatch, redis_db):
    lab = {"name": "lab", "arn": "arn:lab", "status": "ACTIVE", "version": "1.33", "tags": OURS}
    monkeypatch.setattr(readmodel.eks, "managed_clusters", lambda client: [lab])
    monkeypatch.setattr(readmodel.eks, "describe", lambda client, name: None)
    monkeypatch.setattr(readmodel.aws, "client", lambda service, region=None: object())
    registry.remember(redis_db, "outside", "eu-west-1", None, "operator")
    listed = readmodel.listing()
    assert [{k: item[k] for k in ("name", "region", "imported", "eks")} for item in listed] == [
        {"name": "lab", "region": "us-west-2", "imported": False,
         "eks": {"status": "ACTIVE", "version": "1.33", "arn": "arn:lab"}},
        {"name": "outside", "region": "eu-west-1", "imported": True, "eks": None}]
    # no operation kept for lab (its records are gone): its state says so, never "created"
    assert [item["state"]["status"] for item in listed] == ["unknown", "imported"]
    assert [s["status"] for s in listed[0]["stages"]] == ["not_run"] * 6
    assert listed[1]["stages"] == []


def test_the_list_shows_a_create_that_stopped_before_eks(app_ctx, monkeypatch, store):
    """A create cancelled (or failed) before its EKS cluster existed is a cluster: listed,
    with its stages and its state; one whose delete succeeded is not."""
    monkeypatch.setattr(readmodel.eks, "managed_clusters", lambda client: [])
    monkeypatch.setattr(readmodel.eks, "describe", lambda client, name: None)
    monkeypatch.setattr(readmodel.aws, "client", lambda service, region=None: object())
    store.add("cluster.create", "early", status="cancelled", steps=[
        {"name": "vpc", "stage": "network", "phase": "succeeded", "detail": None},
        {"name": "subnets", "stage": "network", "phase": "applied", "detail": None},
        {"name": "eks_cluster", "stage": "eks", "phase": "skipped", "detail": None}])
    store.add("cluster.create", "gone")
    store.add("cluster.delete", "gone")
    listed = readmodel.listing()
    assert [item["name"] for item in listed] == ["early"]
    assert listed[0]["state"]["status"] == "create_cancelled"
    assert listed[0]["state"]["summary"].startswith("create cancelled at stage network")
    assert {s["name"]: s["status"] for s in listed[0]["stages"]} == {
        "network": "cancelled", "eks": "skipped", "activate": "not_run",
        "dependencies": "not_run", "hyperpod": "not_run", "storage": "not_run"}
