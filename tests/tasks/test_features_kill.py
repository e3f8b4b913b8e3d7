"""The worst moment to die, for each step of turning a feature on: the worker's whole
process group is SIGKILLed after AWS answered the step's mutation and before hypd recorded
it. The toggle still finishes, and every IAM role (and add-on, and HyperPod update) was
asked for exactly once."""

from __future__ import annotations

import uuid

import pytest

from cloud import dependencies
from cloud.iam import role_name
from tests.app.featurekit import features, patch, role_names, state, toggle
from tests.app.test_clusters_api import _body, _create

# (feature, the step killed, the fault point: the step's mutating AWS call, what must have
# been asked for once: (action, the request field naming it, its value with {c} the cluster))
CASES = {
    "training-requirements": ("training_operator", "requirements", "eks", "CreateAddon",
                              ("CreateAddon", "addonName", "cert-manager")),
    "training-identity": ("training_operator", "identity", "iam", "CreateRole",
                          ("CreateRole", "RoleName", "hypd-{c}-training-op")),
    "training-enable": ("training_operator", "enable", "eks", "CreateAddon",
                        ("CreateAddon", "addonName",
                         "amazon-sagemaker-hyperpod-training-operator")),
    "tiered-identity": ("tiered_checkpointing", "identity", "iam", "CreateRole",
                        ("CreateRole", "RoleName", "hypd-{c}-ckpt")),
    "tiered-identity-policy": ("tiered_checkpointing", "identity", "iam", "PutRolePolicy",
                               ("CreateRole", "RoleName", "hypd-{c}-ckpt")),
    "tiered-enable": ("tiered_checkpointing", "enable", "sagemaker", "UpdateCluster",
                      ("UpdateCluster", "ClusterName", "{c}")),
    # spaces' first role (the EBS CSI driver's, then the Spaces controller's, each asked once)
    "spaces-identity": ("spaces", "identity", "iam", "CreateRole",
                        ("CreateRole", "RoleName", "hypd-{c}-ebs-csi")),
}


@pytest.fixture(scope="module")
def cluster(stack):
    stack.wait_idle()
    name = f"fk-{uuid.uuid4().hex[:5]}"
    assert _create(stack, _body(name))["status"] == "succeeded"
    return name


def _asked(stack, since: int, action: str, field: str, value: str) -> int:
    return sum(1 for c in stack.sandbox.calls(action=action, since=since)
               if 200 <= c["status"] < 300 and c["params"].get(field) == value)


# the default run kills the step of one enable that installs (the training operator's
# add-on); the long form (-m slow) also its other steps (requirements, identity), each step of
# tiered checkpointing's chain (the role, its policy, the HyperPod setting) and spaces'
# identity step (two roles) — as the fault campaign kills every step of feature.update
LONG_FORM = ("training-requirements", "training-identity", "tiered-identity",
             "tiered-identity-policy", "tiered-enable", "spaces-identity")


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in LONG_FORM
                                  else c for c in CASES])
def test_a_worker_killed_at_each_step_of_an_enable_still_finishes_it_once(stack, cluster,
                                                                           case):
    feature, step, service, action, (once, field, value) = CASES[case]
    value = value.format(c=cluster)
    stack.wait_idle()
    roles_at_start = role_names(stack, cluster)
    if case == "training-enable":
        # cert-manager there already (the inference operator needs it too), so the first
        # CreateAddon is the training operator's own
        assert toggle(stack, cluster, {"inference_operator": {"enabled": True}})[
            "status"] == "succeeded"
    assert state(stack, cluster, feature) == "off"
    roles_before = role_names(stack, cluster)
    since = stack.sandbox.calls()[-1]["seq"]
    op = stack.killed_once_answered(
        service, action, lambda: patch(stack, cluster, {feature: {"enabled": True}}))
    assert op["status"] == "succeeded", op
    killed = next(s for s in op["steps"] if s["name"] == step)
    assert killed["attempts"] >= 2, killed  # interrupted, then resumed by adopting
    assert _asked(stack, since, once, field, value) == 1
    made = role_names(stack, cluster) - roles_before
    for role in made:  # each role the toggle made was created once
        assert _asked(stack, since, "CreateRole", "RoleName", role) == 1, role
    assert features(stack, cluster)["features"][feature]["state"] == "on"

    # back to off for the next case (and nothing of it left)
    for name in (feature, "inference_operator"):
        if state(stack, cluster, name) != "off":
            assert toggle(stack, cluster, {name: {"enabled": False}})["status"] == "succeeded"
    # nothing of it left but the identities of the controllers endpoints use too (the load
    # balancer controller's and KEDA's, which turning the inference operator on installed)
    sticky = {role_name(cluster, d.identity.role) for d in dependencies.catalog()
              if d.sticky and d.identity is not None}
    assert role_names(stack, cluster) - roles_at_start <= sticky
    assert roles_at_start <= role_names(stack, cluster)
