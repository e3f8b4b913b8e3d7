"""The capacity words a request chooses from, the EFA rule, and the words of a cost estimate.

The EFA rule is stated here once because three readers apply it: the API before anything is
made (`app/choices.py`), the capacity function that builds AWS's request
(`cloud/capacity.py`), and the dashboard, which reads `EFA_MIN_INTERFACES` from the OpenAPI
document (the `efa_mode` field's `x-hypd-min-efa-interfaces`) instead of keeping a rule of
its own. HyperPod refuses `efa` on a type without EFA and `efa-only` on a type with a single
EFA interface; an unset mode means EFA where the type has it and none where it has not.
"""

from __future__ import annotations

ON_DEMAND = "on-demand"
SPOT = "spot"
TRAINING_PLAN = "training-plan"
CAPACITY_TYPES = (ON_DEMAND, SPOT, TRAINING_PLAN)

EFA = "efa"
EFA_ONLY = "efa-only"
EFA_MODES = (EFA, EFA_ONLY)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""The Kubernetes taint effects a group's nodes may carry."""

EFA_MIN_INTERFACES: dict[str, int] = {EFA: 1, EFA_ONLY: 2}
"""The EFA interfaces an instance type needs for each mode."""


def efa_interfaces(efa_supported: bool | None, max_efa_interfaces: int | None) -> int:
    """How many EFA interfaces a type has, from discovery's two fields (a type that supports
    EFA has at least one, whether or not EC2 said how many)."""
    return max(int(max_efa_interfaces or 0), 1) if efa_supported else 0


def default_efa_mode(efa_supported: bool | None) -> str | None:
    """The mode an unset `efa_mode` means: EFA where the type has it, none where it has not."""
    return EFA if efa_supported else None


def efa_refusal(mode: str, instance_type: str, interfaces: int) -> str | None:
    """Why `instance_type`, with `interfaces` EFA interfaces, cannot take `mode`; None when
    it can (an unknown mode is the schema's to refuse)."""
    if interfaces >= EFA_MIN_INTERFACES.get(mode, 0):
        return None
    if interfaces == 0:
        return f"{instance_type} does not support EFA; leave efa_mode unset"
    return (f"{mode} needs an instance type with several EFA interfaces; {instance_type} "
            f"has {interfaces}")


LIST_PRICE = "list-price"
UNKNOWN_PRICE = "unknown"
PRICE_BASES = (LIST_PRICE, SPOT, TRAINING_PLAN, UNKNOWN_PRICE)
"""What a cost estimate's price is based on."""

HYPERPOD_INSTANCES = "hyperpod_instances"
EKS_CONTROL_PLANE = "eks_control_plane"
EKS_EXTENDED_SUPPORT = "eks_extended_support"
NAT_GATEWAY = "nat_gateway"
FSX_FILE_SYSTEM = "fsx_file_system"
COST_KINDS = (HYPERPOD_INSTANCES, EKS_CONTROL_PLANE, EKS_EXTENDED_SUPPORT, NAT_GATEWAY,
              FSX_FILE_SYSTEM)
"""The lines of a cost estimate."""
