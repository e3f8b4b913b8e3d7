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
# -- docs/configuration.md is checked against the code ----------------------------------------

SAMPLES = {
    "HYPD_AWS": "aws", "HYPD_REGION": "eu-west-1", "HYPD_HOST": "0.0.0.0", "HYPD_PORT": "8080",
    "HYPD_REDIS_URL": "redis://r:6379/0", "HYPD_DATA_DIR": "/srv/hypd",
    "HYPD_OPERATOR_TOKEN": "o", "HYPD_VIEWER_TOKEN": "v", "HYPD_TOKENS_FILE": "/t.yaml",
    "HYPD_BUDGET_CHECK_S": "60",
    "HYPD_SANDBOX_SPEED": "10", "HYPD_POLL_MIN_S": "1", "HYPD_POLL_MAX_S": "30",
    "HYPD_VISIBILITY_TIMEOUT_S": "600", "HYPD_LEASE_S": "20", "HYPD_API_URL": "http://a:1",
    "HYPD_TOKEN": "t", "HYPD_LOG_FORMAT": "json", "HYPD_METRICS_DIR": "/m",
    "HYPD_ROLE_BOUNDARY_ARN": "arn:aws:iam::123456789012:policy/b",
    "HYPD_AUDIT_MAX_ENTRIES": "1000", "HYPD_PRICING_REGION": "eu-central-1",
    "HYPD_AWS_READ_TIMEOUT_S": "120",
    "HYPD_MODEL_DOWNLOAD_IMAGE": "123456789012.dkr.ecr.us-west-2.amazonaws.com/"
                                 "hypd-model-download:0.34.4",
    "HYPD_SPACES_URL": "https://spaces.example.com",
    "HYPD_SPACES_PORT": "8097",
    "HYPD_WEB_GATE": "4",
}
"""A valid value other than the default for every variable."""


def _documented() -> dict[str, str]:
    """variable → its default column, from the table in docs/configuration.md."""
    import re

    from tests.stack import REPO

    rows = {}
    for line in (REPO / "docs" / "configuration.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`HYPD_[A-Z0-9_]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def _rendered(value) -> str:
    from pathlib import Path

    if value is None:
        return "unset"
    if isinstance(value, Path):
        return "`" + str(value).replace(str(Path.home()), "~") + "`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def test_every_setting_is_documented_with_its_default():
    import dataclasses
    import re

    from tests.stack import REPO

    source = (REPO / "cloud" / "settings.py").read_text()
    read = set(re.findall(r'"(HYPD_[A-Z0-9_]+)"', source))
    documented = _documented()
    assert set(documented) == read, (set(documented) ^ read)
    assert set(SAMPLES) == read
    defaults = Settings.from_env({})
    fields = {f.name for f in dataclasses.fields(Settings)}
    for variable, sample in SAMPLES.items():
        changed = Settings.from_env({variable: sample})
        moved = [f for f in fields if getattr(changed, f) != getattr(defaults, f)]
        assert len(moved) == 1, (variable, moved)  # the variable sets exactly one setting
        default = _rendered(getattr(defaults, moved[0]))
        assert documented[variable].startswith(default), (variable, documented[variable],
                                                          default)


@pytest.mark.parametrize(("variable", "value"), [
    ("HYPD_LOG_FORMAT", "xml"), ("HYPD_AUDIT_MAX_ENTRIES", "10"),
    ("HYPD_AUDIT_MAX_ENTRIES", "many"), ("HYPD_ROLE_BOUNDARY_ARN", "hypd-role-boundary"),
    ("HYPD_ROLE_BOUNDARY_ARN", "arn:aws:iam::123456789012:role/hypd/x"),
    ("HYPD_MODEL_DOWNLOAD_IMAGE", "python:3.12-slim; curl x | sh"),
    ("HYPD_MODEL_DOWNLOAD_IMAGE", "Registry/Image:1"), ("HYPD_MODEL_DOWNLOAD_IMAGE", "img:"),
    ("HYPD_SPACES_URL", "http://spaces.example.com"),
    ("HYPD_SPACES_URL", "https://spaces.example.com/?token=x"),
    ("HYPD_SPACES_URL", "https://spaces.example.com/spaces"),
    ("HYPD_SPACES_URL", "http://10.0.0.5:3097"), ("HYPD_SPACES_PORT", "70000"),
    ("HYPD_WEB_GATE", "eight"), ("HYPD_WEB_GATE", "-1"),
])
def test_new_settings_refuse_values_hypd_cannot_run_with(variable, value):
    with pytest.raises(SettingsError, match=variable):
        Settings.from_env({variable: value})


def test_the_metrics_directory_defaults_to_the_data_dir():
    from pathlib import Path

    assert Settings.from_env({"HYPD_DATA_DIR": "/srv/h"}).metrics_path == Path("/srv/h/metrics")
    assert Settings.from_env({"HYPD_METRICS_DIR": "/m"}).metrics_path == Path("/m")
