"""The Kubernetes version table: HyperPod's documented versions with the EKS release
calendar's dates, read as standard → extended → ended support, and the API's rule built on it."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from marshmallow import ValidationError

from schemas.cluster_software import KubernetesUpgradeSchema
from schemas.clusters import KUBERNETES_VERSIONS, ClusterCreateSchema
from vocabulary import kubernetes_versions as kv


def test_the_table_is_hyperpods_versions_with_the_eks_calendars_dates_and_sources():
    table = kv.table()
    # what the HyperPod EKS prerequisites page lists, oldest first
    assert list(table) == ["1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34"]
    for version in table.values():
        # 14 months of standard support, then 12 of extended (the EKS calendar's rule)
        assert version.end_of_extended_support.year == version.end_of_standard_support.year + 1
        assert (version.end_of_extended_support.month, version.end_of_extended_support.day) \
            == (version.end_of_standard_support.month, version.end_of_standard_support.day)
    assert table["1.33"].end_of_standard_support == date(2026, 7, 29)
    assert set(kv.sources()) == {"hyperpod", "eks_calendar", "eks_pricing"}
    assert all(url.startswith("https://") for url in kv.sources().values())


def test_support_goes_standard_then_extended_then_ended_on_the_calendars_days():
    version = kv.get("1.32")
    end_standard, end_extended = date(2026, 3, 23), date(2027, 3, 23)
    assert version.support(end_standard - timedelta(days=1)) == kv.STANDARD
    assert version.support(end_standard) == kv.EXTENDED
    assert version.support(end_extended - timedelta(days=1)) == kv.EXTENDED
    assert version.support(end_extended) == kv.ENDED
    assert version.describe(end_standard) == {
        "version": "1.32", "support": "extended", "end_of_standard_support": "2026-03-23",
        "end_of_extended_support": "2027-03-23"}
    assert kv.support_of("1.32", end_standard) == version.describe(end_standard)
    assert kv.support_of("1.27") is None and kv.support_of(None) is None  # not in the table


def test_offered_versions_are_those_eks_still_runs_and_the_default_is_the_newest():
    assert kv.offered(date(2026, 1, 1)) == ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
    assert kv.offered(date(2026, 12, 3)) == ("1.32", "1.33", "1.34")
    assert kv.default(date(2026, 12, 3)) == "1.34"
    assert kv.default(date(2030, 1, 1)) == "1.34"  # a stale table: refused below, not a crash


def test_the_api_offers_todays_versions_and_refuses_an_ended_one_with_its_date():
    assert kv.offered() == KUBERNETES_VERSIONS
    body = {"name": "lab", "availability_zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
            "instance_count": 1}
    assert ClusterCreateSchema().load(body)["kubernetes_version"] == kv.default()
    for schema, field, extra in ((ClusterCreateSchema(), "kubernetes_version", body),
                                 (KubernetesUpgradeSchema(), "version", {})):
        with pytest.raises(ValidationError) as refused:
            schema.load({**extra, field: "1.28"})  # ended 2025-11-26, for good
        [message] = refused.value.messages[field]
        assert message.startswith("EKS ended support for Kubernetes 1.28 on 2025-11-26")
        assert ", ".join(kv.offered()) in message
        with pytest.raises(ValidationError):
            schema.load({**extra, field: "1.99"})


def test_a_stale_table_refuses_even_the_default_and_says_what_to_do(monkeypatch):
    monkeypatch.setattr(kv, "today", lambda: date(2030, 1, 1))
    body = {"name": "lab", "availability_zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
            "instance_count": 1}
    with pytest.raises(ValidationError) as refused:
        ClusterCreateSchema().load(body)  # no version given: the default is refused too
    [message] = refused.value.messages["kubernetes_version"]
    assert message.startswith("EKS ended support for Kubernetes 1.34 on 2027-12-02")
    assert "add the versions SageMaker HyperPod documents now" in message
