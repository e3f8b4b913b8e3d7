"""Settings read from the environment, and the combinations hypd refuses to run with."""

from __future__ import annotations

import pytest

from cloud.settings import Settings, SettingsError


def test_the_lease_is_short_by_default_and_apart_from_the_visibility_timeout():
    settings = Settings.from_env({})
    assert settings.lease_s == 15 and settings.visibility_timeout_s == 300
    assert Settings.from_env({"HYPD_LEASE_S": "2", "HYPD_VISIBILITY_TIMEOUT_S": "5",
                              "HYPD_POLL_MIN_S": "0.1", "HYPD_POLL_MAX_S": "1"}).lease_s == 2


@pytest.mark.parametrize("lease", ["0", "-1", "300", "400"])
def test_a_lease_that_is_not_below_the_visibility_timeout_is_refused(lease):
    with pytest.raises(SettingsError, match="HYPD_LEASE_S"):
        Settings.from_env({"HYPD_LEASE_S": lease})


def test_the_price_list_is_read_where_aws_serves_it():
    assert Settings.from_env({}).pricing_region == "us-east-1"
    assert Settings.from_env({"HYPD_PRICING_REGION": "ap-south-1"}).pricing_region == "ap-south-1"
    with pytest.raises(SettingsError, match=r"HYPD_PRICING_REGION .*us-east-1"):
        Settings.from_env({"HYPD_PRICING_REGION": "us-west-2"})
