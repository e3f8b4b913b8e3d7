"""The words of task governance (teams and the cluster's scheduler config), stated once.

SageMaker's states of a compute quota or scheduler config are botocore's
`SchedulerResourceStatus` enum, read from the model (never retyped); the settled ones end an
operation's wait, the failed ones fail it. The Kubernetes names are those AWS's task-governance
add-on makes for a team (the HyperPod CLI's constants: `hyperpod-ns-<team>`, its
`-localqueue` and `-clusterqueue`): hypd reads them, it never writes them.
"""

from __future__ import annotations

import botocore.session

_MODEL = botocore.session.get_session().get_service_model("sagemaker")

STATUSES: tuple[str, ...] = tuple(_MODEL.shape_for("SchedulerResourceStatus").enum)
"""Creating, Created, Updating, Updated, Deleting, Deleted and their *Failed states."""
SETTLED = tuple(s for s in STATUSES if s in ("Created", "Updated"))
FAILED = tuple(s for s in STATUSES if s.endswith("Failed"))
DELETING = "Deleting"
GONE = "Deleted"

PREEMPT = "LowerPriority"
NEVER_PREEMPT = "Never"
LEND_AND_BORROW = "LendAndBorrow"
LEND = "Lend"
DONT_LEND = "DontLend"
ENABLED = "Enabled"
DISABLED = "Disabled"

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""A job's (a space's) label naming the LocalQueue (in its own namespace) Kueue admits it
through."""
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""A job's (a space's) label naming its WorkloadPriorityClass."""
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""A Workload's label naming the uid of the job it stands for (of the pod, for a plain pod's
Workload: a space's)."""
PRIORITY_SUFFIX = "-priority"
"""The scheduler config's priority class `<name>` is WorkloadPriorityClass `<name>-priority`
(AWS's task-governance examples label jobs `kueue.x-k8s.io/priority-class:
training-priority`)."""

NAMESPACE_PREFIX = "hyperpod-ns-"
LOCAL_QUEUE_SUFFIX = "-localqueue"
CLUSTER_QUEUE_SUFFIX = "-clusterqueue"
TEAM_NAME_MAX = 63 - len(NAMESPACE_PREFIX) - len(CLUSTER_QUEUE_SUFFIX)
"""A team's longest name: its ClusterQueue's name must stay a Kubernetes name (63)."""
TEAM_NAME_RULE = (f"a team name as SageMaker takes it (lowercase letters, digits and hyphens, "
                  f"starting and ending with a letter or digit), at most {TEAM_NAME_MAX} "
                  "characters")
BORROW_LIMIT_MAX = 500
"""AWS documents BorrowLimit as 1-500 percent (the model allows more)."""


def namespace(team: str) -> str:
    return f"{NAMESPACE_PREFIX}{team}"


def local_queue(team: str) -> str:
    return f"{namespace(team)}{LOCAL_QUEUE_SUFFIX}"


def cluster_queue(team: str) -> str:
    return f"{namespace(team)}{CLUSTER_QUEUE_SUFFIX}"


def priority_class(name: str) -> str:
    """The WorkloadPriorityClass the add-on makes for the scheduler config's class `name`."""
    return f"{name}{PRIORITY_SUFFIX}"


def priority_name(workload_class: str | None) -> str | None:
    """The scheduler config's class a WorkloadPriorityClass stands for (None: not one)."""
    if not workload_class or not workload_class.endswith(PRIORITY_SUFFIX):
        return None
    return workload_class[: -len(PRIORITY_SUFFIX)] or None


def queue_labels(team: str | None, priority: str | None) -> dict[str, str]:
    """The labels that send a team's work through its queue: its LocalQueue and, when asked,
    the scheduler config class's WorkloadPriorityClass (none outside a team)."""
    if not team:
        return {}
    out = {QUEUE_LABEL: local_queue(team)}
    if priority:
        out[PRIORITY_LABEL] = priority_class(priority)
    return out


def team_of_namespace(namespace: str | None) -> str | None:
    """The team whose namespace this is (`hyperpod-ns-<team>`), or None."""
    if not namespace or not namespace.startswith(NAMESPACE_PREFIX):
        return None
    return namespace[len(NAMESPACE_PREFIX):] or None
