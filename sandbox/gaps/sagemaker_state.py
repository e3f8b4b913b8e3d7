"""The local HyperPod clusters: their records, and how changes are applied and scheduled.

All state of one local AWS lives in one `HyperPod` object (the gap state `HYPERPOD`, under
"sagemaker"), guarded by one lock. A handler runs under the lock with a `Batch`: what it wants
to happen later (`batch.after`) is put on the layer's timeline, and what it must tell the
local Kubernetes (`batch.effect`) is done, only after the lock is released — a timeline change
takes the lock itself, and the timeline's own lock is held while changes run, so scheduling
under our lock could deadlock. A change that runs later gets a batch too, but may not schedule
further changes: every chain of states (Pending → deep health checks → Running) is scheduled
up front, each step guarded by the node's `epoch`, which any later action on the node bumps.
"""

from __future__ import annotations

import ipaddress
import logging
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from sandbox.gaps import GapState, ages
from sandbox.simulator import DeepHealthCheck, Health

log = logging.getLogger(__name__)

STATE_KEY = "sagemaker"

# Simulated seconds, as on AWS (scaled by the sandbox speed).
CLUSTER_CREATING_S = 600.0  # cluster-level resources (AWS: 10+ minutes)
NODE_LAUNCH_S = 480.0  # instance launch, lifecycle scripts, kubelet joins
DEEP_HEALTH_CHECK_S = 900.0  # on-start deep health checks
CLUSTER_UPDATING_S = 120.0  # the shortest UpdateCluster
NODE_SHUTDOWN_S = 120.0  # a deleted or replaced instance terminates
NODE_REBOOT_S = 300.0
CLUSTER_DELETING_S = 300.0
SOFTWARE_UPDATE_S = 600.0
# Events kept per cluster (the oldest go first).
MAX_EVENTS = 1000


class ClusterStatus(StrEnum):
    CREATING = "Creating"
    IN_SERVICE = "InService"
    UPDATING = "Updating"
    SYSTEM_UPDATING = "SystemUpdating"
    DELETING = "Deleting"
    FAILED = "Failed"


class GroupStatus(StrEnum):
    CREATING = "Creating"
    IN_SERVICE = "InService"
    UPDATING = "Updating"
    SYSTEM_UPDATING = "SystemUpdating"
    FAILED = "Failed"
    DEGRADED = "Degraded"
    DELETING = "Deleting"


class NodeStatus(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    DEEP_HEALTH_CHECK = "DeepHealthCheckInProgress"
    SYSTEM_UPDATING = "SystemUpdating"
    SHUTTING_DOWN = "ShuttingDown"
    FAILURE = "Failure"


def now() -> datetime:
    return datetime.now(UTC)


def mint_instance_id() -> str:
    """An EC2-style instance id: "i-" and 17 hex digits."""
    return "i-0" + secrets.token_hex(8)


def mint_cluster_id() -> str:
    """The 12 lower-case letters and digits that end a HyperPod cluster ARN."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(12))


@dataclass
class Node:
    instance_id: str
    group: str
    instance_type: str
    capacity_type: str  # "OnDemand" | "Spot"
    launch_time: datetime
    subnet_id: str
    zone: str
    zone_id: str
    private_ip: str
    ip_count: int  # addresses the instance takes from its subnet
    ip_reserved: bool = False  # they fitted (else the launch fails)
    interfaces: tuple[str, ...] = ()  # its network interfaces in the VPC (sagemaker_network)
    logical_id: str | None = None
    status: NodeStatus = NodeStatus.PENDING
    message: str | None = None
    health: Health = Health.UNSCHEDULABLE
    deep_health_check: DeepHealthCheck | None = None
    registered: bool = False  # its kubelet has joined (a Node exists in Kubernetes)
    epoch: int = 0
    fail_reason: str | None = None  # decided at launch, shown when it boots
    last_software_update: datetime | None = None
    applied_labels: tuple[str, ...] = ()

    def bump(self) -> int:
        self.epoch += 1
        return self.epoch

    @property
    def counted(self) -> bool:
        """Part of the group's CurrentCount: booted and not on its way out."""
        return self.registered and self.status not in (NodeStatus.SHUTTING_DOWN, NodeStatus.FAILURE)


@dataclass
class Group:
    spec: dict[str, Any]  # the ClusterInstanceGroupSpecification as last sent
    status: GroupStatus
    target: int
    # The subnet HyperPod picked for the group: {"SubnetId", "Cidr", "Zone", "ZoneId"}.
    placement: dict[str, str] = field(default_factory=dict)
    software_update_status: str | None = None

    @property
    def name(self) -> str:
        return str(self.spec["InstanceGroupName"])

    @property
    def instance_type(self) -> str:
        if self.spec.get("InstanceType"):
            return str(self.spec["InstanceType"])
        return str(self.spec["InstanceRequirements"]["InstanceTypes"][0])

    @property
    def capacity_type(self) -> str:
        requirements = self.spec.get("CapacityRequirements") or {}
        return "Spot" if "Spot" in requirements else "OnDemand"

    @property
    def deep_health_checks(self) -> list[str]:
        return list(self.spec.get("OnStartDeepHealthChecks") or [])


@dataclass
class Event:
    event_id: str
    time: datetime
    resource_type: str  # Cluster | InstanceGroup | Instance
    description: str
    level: str = "Info"
    group: str | None = None
    instance_id: str | None = None
    operation_id: str | None = None


@dataclass
class Cluster:
    name: str
    arn: str
    account: str
    region: str
    created: datetime
    request: dict[str, Any]  # cluster-level fields as sent (VpcConfig, Orchestrator, ...)
    status: ClusterStatus
    groups: dict[str, Group] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    tags: list[dict[str, str]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    failure_message: str | None = None
    autoscaling_status: str | None = None
    update_token: str | None = None  # the running non-continuous update

    @property
    def continuous(self) -> bool:
        return self.request.get("NodeProvisioningMode") == "Continuous"

    @property
    def eks_arn(self) -> str | None:
        return ((self.request.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")

    @property
    def eks_name(self) -> str | None:
        arn = self.eks_arn
        return arn.rsplit("/", 1)[-1] if arn else None

    def event(
        self,
        resource_type: str,
        description: str,
        level: str = "Info",
        group: str | None = None,
        instance_id: str | None = None,
        operation_id: str | None = None,
    ) -> None:
        self.events.append(
            Event(
                str(uuid.uuid4()),
                now(),
                resource_type,
                description,
                level,
                group,
                instance_id,
                operation_id,
            )
        )
        del self.events[:-MAX_EVENTS]

    def nodes_of(self, group: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.group == group]

    def age(self, delta: timedelta) -> None:
        """The cluster's CreationTime and its nodes' LaunchTime, `delta` earlier. Its events'
        times and the nodes' LastSoftwareUpdateTime stay: a product compares those with
        moments of its own (when it asked for a reboot, the newest update before it called),
        which a jump does not move, so moving them would hide what happened since."""
        self.created -= delta
        for node in self.nodes.values():
            node.launch_time -= delta


class Batch:
    """Changes to schedule and Kubernetes writes to do once the state lock is released."""

    def __init__(self, deferred_allowed: bool = True) -> None:
        self.later: list[tuple[float, Callable[[Batch], None]]] = []
        self.effects: list[Callable[[], None]] = []
        self._deferred_allowed = deferred_allowed

    def after(self, seconds: float, change: Callable[[Batch], None]) -> None:
        if not self._deferred_allowed:
            raise RuntimeError("a timed change may not schedule further changes")
        self.later.append((seconds, change))

    def effect(self, fn: Callable[[], None]) -> None:
        self.effects.append(fn)


class HyperPod:
    """Every HyperPod cluster of one local AWS."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.RLock()
        self.clusters: dict[tuple[str, str], dict[str, Cluster]] = {}
        self.subnet_used: dict[str, int] = {}
        self.client_tokens: dict[tuple[str, str], dict[str, Any]] = {}
        self.subnet_next: dict[str, int] = {}

    def in_region(self, account: str, region: str) -> dict[str, Cluster]:
        return self.clusters.setdefault((account, region), {})

    def find(self, account: str, region: str, name_or_arn: str) -> Cluster | None:
        clusters = self.in_region(account, region)
        if name_or_arn.startswith("arn:"):
            return next((c for c in clusters.values() if c.arn == name_or_arn), None)
        return clusters.get(name_or_arn)

    def find_by_arn(self, arn: str) -> Cluster | None:
        for clusters in self.clusters.values():
            for cluster in clusters.values():
                if cluster.arn == arn:
                    return cluster
        return None

    def alive(self, cluster: Cluster) -> bool:
        """Still this cluster (not deleted, nor replaced by a new one of the same name)."""
        return self.in_region(cluster.account, cluster.region).get(cluster.name) is cluster

    def run(self, fn: Callable[[Batch], Any]) -> Any:
        """Run a handler's state change under the lock, then schedule and apply its effects."""
        batch = Batch()
        with self.lock:
            result = fn(batch)
        for seconds, change in batch.later:
            self.app.transitions.timeline.after(seconds, self._timed(change))
        self._apply(batch)
        return result

    def _timed(self, change: Callable[[Batch], None]) -> Callable[[], None]:
        def run_change() -> None:
            batch = Batch(deferred_allowed=False)
            try:
                with self.lock:
                    change(batch)
            except Exception:
                log.exception("sandbox: a timed HyperPod change failed")
                return
            self._apply(batch)

        return run_change

    @staticmethod
    def _apply(batch: Batch) -> None:
        for effect in batch.effects:
            try:
                effect()
            except Exception:
                log.exception("sandbox: a HyperPod side effect failed")

    # --- subnet addresses ------------------------------------------------------------------

    def allocate_ip(self, subnet_id: str, cidr: str, count: int) -> tuple[str, bool]:
        """The next primary address in the subnet, and whether `count` addresses still fit
        (AWS keeps five addresses of every subnet)."""
        network = ipaddress.IPv4Network(cidr, strict=False)
        capacity = network.num_addresses - 5
        fits = self.subnet_used.get(subnet_id, 0) + count <= capacity
        if fits:
            self.subnet_used[subnet_id] = self.subnet_used.get(subnet_id, 0) + count
        index = self.subnet_next.get(subnet_id, 4)
        if index >= network.num_addresses - 1:
            index = 4
        self.subnet_next[subnet_id] = index + 1
        return str(network.network_address + index), fits

    def release_ips(self, node: Node) -> None:
        if node.ip_reserved:
            node.ip_reserved = False
            used = self.subnet_used.get(node.subnet_id, 0) - node.ip_count
            self.subnet_used[node.subnet_id] = max(0, used)


HYPERPOD: GapState[HyperPod] = GapState(STATE_KEY, HyperPod)


@ages
def _age_clusters(app: Any, delta: timedelta) -> None:
    """The sandbox's clock jumped: every HyperPod cluster there is now is `delta` older."""
    hp = HYPERPOD.peek(app)
    if hp is None:
        return
    with hp.lock:
        for clusters in hp.clusters.values():
            for cluster in clusters.values():
                cluster.age(delta)


def hyperpod(owner: Any) -> HyperPod:
    """The HyperPod state of a local AWS (`owner`: the app, or a GapContext on it)."""
    return HYPERPOD.of(owner)
