"""The test stack itself: its local AWS is a process of its own, reached only over HTTP, which
is what lets the suite distribute by test (`./dev.sh test` runs `pytest -n 2 --dist load`)."""

from __future__ import annotations

import os
import re
import uuid

from tests.stack import REPO


def test_the_local_aws_is_its_own_process_and_this_one_holds_none_of_its_state(stack):
    from moto.backends import get_backend

    assert stack.sandbox_proc.poll() is None and stack.sandbox_proc.pid != os.getpid()
    name = f"stack-{uuid.uuid4().hex[:8]}"
    ec2 = stack.aws("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.199.0.0/16", TagSpecifications=[{
        "ResourceType": "vpc", "Tags": [{"Key": "Name", "Value": name}]}])["Vpc"]["VpcId"]
    assert [v["VpcId"] for v in ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]] == [vpc_id]
    assert [c["resource_ids"] for c in stack.sandbox.calls(service="ec2", action="CreateVpc")
            if c["params"].get("TagSpecification.1.Tag.1.Value") == name] == [[vpc_id]]
    # moto's backends are process-wide: had the stack's local AWS run here, its VPC would be
    in_this_process = get_backend("ec2")["123456789012"]["us-west-2"].vpcs
    assert vpc_id not in in_this_process


def test_the_suite_is_distributed_by_test():
    """Whole files per worker (`--dist loadfile`) was needed while the stack's moto lived in
    the test process; no test may rely on another test of its file having run first."""
    dev_sh = (REPO / "dev.sh").read_text()
    [command] = re.findall(r"^exec .* -m pytest (.*)$", dev_sh, re.M)
    assert re.search(r"-n [2-9] --dist (load|worksteal)\b", command), command


def test_a_module_sharing_a_module_fixture_is_scheduled_whole_and_others_test_by_test():
    from tests.conftest import _shares_a_module_fixture

    assert _shares_a_module_fixture(REPO / "tests/app/test_nodes_api.py")  # its own cluster
    assert _shares_a_module_fixture(REPO / "tests/e2e/test_dashboard.py")  # the browser
    assert not _shares_a_module_fixture(REPO / "tests/app/test_errors.py")


def test_the_modules_sharing_the_spaces_cluster_are_scheduled_together():
    """Each names the session's spaces cluster, so the scheduler sends all of them to one
    worker (one spaces cluster in a run); a module naming none is not grouped so."""
    from tests.conftest import _grouped_session_fixture

    for module in ("tests/app/test_spaces_api.py", "tests/tasks/test_spaces_kill.py",
                   "tests/e2e/test_spaces_page.py"):
        assert _grouped_session_fixture(REPO / module) == "spaces_cluster", module
    assert _grouped_session_fixture(REPO / "tests/app/test_nodes_api.py") is None
