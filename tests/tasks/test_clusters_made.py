"""tasks/clusters.py on its own: what each step of a create made (what the cluster's read
checks in AWS after a stop), and what a delete is told from the create's record — so that it
removes exactly what was made, from wherever the create stopped."""

from __future__ import annotations

from typing import Any

from tasks import clusters


def _step(name: str, attempts: int = 1, **resources: Any) -> dict[str, Any]:
    return {"name": name, "attempts": attempts, "resources": resources}


def test_each_step_names_what_it_made_from_its_record():
    assert clusters.made(_step("vpc", vpc_id="vpc-1"), "lab") == [("vpc", "vpc-1")]
    assert clusters.made(_step("subnets", subnets=[{"id": "subnet-1"}, {"id": "subnet-2"}],
                               private_subnet_ids=["subnet-1"]), "lab") == [
        ("subnet", "subnet-1"), ("subnet", "subnet-2")]
    assert clusters.made(_step("nat_gateway", nat_gateway_id="nat-1", allocation_id="eip-1"),
                         "lab") == [("nat_gateway", "nat-1"), ("elastic_ip", "eip-1")]
    # roles by name, whether recorded as an ARN or not recorded at all once the step started
    assert clusters.made(_step(
        "hyperpod_roles", execution_role_arn="arn:aws:iam::1:role/hypd/hypd-lab-hp-exec"),
        "lab") == [("iam_role", "hypd-lab-hp-exec"), ("iam_role", "hypd-lab-hp-cluster")]
    assert clusters.made(_step("eks_cluster"), "lab") == [("eks_cluster", "lab")]
    assert clusters.made(_step("eks_cluster", attempts=0), "lab") == []  # never started
    # what the user brought is not what the create made
    assert clusters.made(_step("existing_network", vpc_id="vpc-user",
                               private_subnet_ids=["subnet-user"],
                               security_group_id="sg-user"), "lab") == []
    assert clusters.made(_step("existing_network", security_group_id="sg-made",
                               made_security_group_id="sg-made"), "lab") == [
        ("security_group", "sg-made")]
    assert clusters.made(_step("s3_bucket", bucket="users", made_by_hypd=False), "lab") == []
    assert clusters.made(_step("activate", active_for="operator"), "lab") == []


def test_a_delete_is_told_what_the_create_made():
    made_network = {"params": {"name": "lab"}, "steps": [
        _step("vpc", vpc_id="vpc-1"),
        _step("eks_access", oidc_issuer="https://oidc.eks/id/ABC")]}
    params = clusters.delete_params("lab", "us-west-2", made_network, False)
    assert params == {"name": "lab", "region": "us-west-2", "network": True,
                      "security_group_id": None, "oidc_issuer": "https://oidc.eks/id/ABC",
                      "delete_data": False}
    steps = [s.name for s in clusters.delete_steps(params)]
    assert steps[-8:] == ["s3_endpoint", "security_group", "route_tables", "nat_gateway",
                          "elastic_ip", "internet_gateway", "subnets", "vpc"]
    assert "existing_network" not in steps
    in_users_vpc = {"params": {"name": "lab", "existing_vpc": {"vpc_id": "vpc-u"}}, "steps": [
        _step("existing_network", vpc_id="vpc-u", made_security_group_id="sg-made")]}
    params = clusters.delete_params("lab", "us-west-2", in_users_vpc, True)
    assert (params["network"], params["security_group_id"]) == (False, "sg-made")
    network = [s.name for s in clusters.delete_steps(params) if s.stage == "network"]
    assert network == ["existing_network"]  # only the group it made; never the user's VPC
    given_group = {"params": {"name": "lab", "existing_vpc": {"vpc_id": "vpc-u"}},
                   "steps": [_step("existing_network", security_group_id="sg-user")]}
    params = clusters.delete_params("lab", "us-west-2", given_group, False)
    assert [s for s in clusters.delete_steps(params) if s.stage == "network"] == []
    # no create kept: the network goes by its tags, as before
    assert clusters.delete_params("lab", "us-west-2", None, False)["network"] is True
