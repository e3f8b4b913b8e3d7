"""FSx for Lustre file systems, as AWS answers for them (moto 5.2.5 falls short).

Measured in moto 5.2.5: CreateFileSystem answers without `Lifecycle`, `MountName`, `VpcId`,
`CreationTime` or `OwnerId`, mints 8-digit ids, ignores `ClientRequestToken` (a retried
create makes a second file system), accepts any capacity, deployment type and subnet; an
unknown id in DescribeFileSystems answers an empty list instead of `FileSystemNotFound`; and
DeleteFileSystem removes the file system at once. The product waits for CREATING → AVAILABLE,
mounts by DNS name and mount name, adopts by client token, and waits for a deletion to end,
so this gap answers the Lustre calls itself:

- CreateFileSystem (Lustre only): the request checked against botocore's model, then as AWS
  checks it — one subnet that exists, security groups that exist in that subnet's VPC, the
  capacity steps of the deployment type, per-unit throughput exactly for the persistent SSD
  types. A `ClientRequestToken` seen before answers the same file system (or
  `IncompatibleParameterError` for other parameters). CREATING for `FSX_CREATING_S`, then
  AVAILABLE. The DNS name and mount name are there from the start, as on AWS.
- DescribeFileSystems: by ids (`FileSystemNotFound` for an unknown one) or all, paged.
- DeleteFileSystem: refused while CREATING or UPDATING; DELETING for `FSX_DELETING_S`, then
  gone (DescribeFileSystems then answers `FileSystemNotFound`).

State lives on the local AWS (the gap state `FILE_SYSTEMS`); timed changes go on the layer's
timeline, scheduled only after this module's lock is released (a timeline change takes the
lock, and the timeline holds its own lock while changes run).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import string
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sandbox.gaps import AwsError, GapContext, GapState, answers
from sandbox.gaps.sagemaker_common import security_group, subnet

STATE_KEY = "fsx"

# Simulated seconds, as on AWS (scaled by the sandbox speed).
FSX_CREATING_S = 600.0  # a Lustre file system takes 5-10 minutes
FSX_DELETING_S = 300.0

# SSD capacity rules: 1200 and 2400 GiB, then steps of 3600 (SCRATCH_1) or 2400 GiB.
CAPACITY_STEP = {"SCRATCH_1": 3600, "SCRATCH_2": 2400, "PERSISTENT_1": 2400, "PERSISTENT_2": 2400}
# MB/s per TiB that each persistent SSD type allows; scratch types take none.
THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
HDD_THROUGHPUT = (12, 40)
DEFAULT_DEPLOYMENT = "SCRATCH_1"
LUSTRE_VERSION = "2.15"
NOT_DELETABLE = ("CREATING", "UPDATING")


@dataclass
class FsxState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    # (account, region, file system id) -> the file system as DescribeFileSystems shows it
    systems: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    # (account, region, client request token) -> (file system id, request fingerprint)
    tokens: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)


FILE_SYSTEMS: GapState[FsxState] = GapState(STATE_KEY, lambda app: FsxState())


def state(ctx: GapContext) -> FsxState:
    return FILE_SYSTEMS.of(ctx)


def _bad(message: str) -> AwsError:
    return AwsError("BadRequest", message)


def _not_found(file_system_id: str) -> AwsError:
    return AwsError("FileSystemNotFound", f"File system '{file_system_id}' does not exist.")


def _fingerprint(params: dict[str, Any]) -> str:
    rest = {k: v for k, v in params.items() if k != "ClientRequestToken"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, default=str).encode()).hexdigest()


def _mount_name(deployment: str) -> str:
    if deployment == "SCRATCH_1":
        return "fsx"
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(8))


def _check_lustre(params: dict[str, Any]) -> dict[str, Any]:
    """The Lustre settings AWS would accept, with its defaults filled in."""
    given = dict(params.get("LustreConfiguration") or {})
    deployment = given.get("DeploymentType") or DEFAULT_DEPLOYMENT
    storage_type = params.get("StorageType") or "SSD"
    capacity = params.get("StorageCapacity")
    if capacity is None:
        raise AwsError("MissingFileSystemConfiguration",
                       "StorageCapacity is required for file system type LUSTRE.")
    if storage_type == "HDD":
        if deployment != "PERSISTENT_1":
            raise _bad("HDD storage is supported only with deployment type PERSISTENT_1.")
        throughput = given.get("PerUnitStorageThroughput")
        if throughput not in HDD_THROUGHPUT:
            raise AwsError("InvalidPerUnitStorageThroughput",
                           f"PerUnitStorageThroughput for HDD must be one of {HDD_THROUGHPUT}.")
    elif storage_type == "SSD":
        step = CAPACITY_STEP.get(deployment)
        if step is None:
            raise _bad(f"Deployment type {deployment} is not supported with SSD storage.")
        if capacity not in (1200, 2400) and capacity % step:
            raise _bad(f"Invalid storage capacity {capacity} GiB for {deployment}: specify "
                       f"1200, 2400, or increments of {step} GiB.")
        allowed = THROUGHPUT.get(deployment)
        throughput = given.get("PerUnitStorageThroughput")
        if allowed and throughput is None:
            raise AwsError("InvalidPerUnitStorageThroughput",
                           f"PerUnitStorageThroughput is required for {deployment}.")
        if allowed and throughput not in allowed:
            raise AwsError("InvalidPerUnitStorageThroughput",
                           f"PerUnitStorageThroughput for {deployment} must be one of "
                           f"{', '.join(str(t) for t in allowed)} MB/s/TiB.")
        if not allowed and throughput is not None:
            raise _bad(f"PerUnitStorageThroughput is not supported for {deployment}.")
    else:
        raise _bad(f"Storage type {storage_type} is not supported for file system type LUSTRE.")
    out: dict[str, Any] = {
        "WeeklyMaintenanceStartTime": given.get("WeeklyMaintenanceStartTime") or "1:05:00",
        "DeploymentType": deployment,
        "MountName": _mount_name(deployment),
        "DataCompressionType": given.get("DataCompressionType") or "NONE",
        "LogConfiguration": {"Level": "DISABLED"},
        "CopyTagsToBackups": bool(given.get("CopyTagsToBackups", False)),
    }
    if given.get("PerUnitStorageThroughput") is not None:
        out["PerUnitStorageThroughput"] = given["PerUnitStorageThroughput"]
    if deployment.startswith("PERSISTENT"):
        out["AutomaticBackupRetentionDays"] = given.get("AutomaticBackupRetentionDays", 0)
    return out


def _check_network(ctx: GapContext, params: dict[str, Any]) -> str:
    """The subnet's VPC, after AWS's checks of the subnet and security groups."""
    subnets = params["SubnetIds"]
    if len(subnets) != 1:
        raise AwsError("InvalidNetworkSettings",
                       "Lustre file systems take exactly one subnet ID.")
    account, region = ctx.call.account, ctx.call.region
    found = subnet(account, region, subnets[0])
    if found is None:
        raise AwsError("InvalidNetworkSettings", f"The subnet ID '{subnets[0]}' does not exist")
    vpc_id = found.vpc_id
    for group_id in params.get("SecurityGroupIds") or ():
        group = security_group(account, region, group_id)
        if group is None:
            raise AwsError("InvalidNetworkSettings",
                           f"The security group '{group_id}' does not exist")
        if group.vpc_id != vpc_id:
            raise AwsError("InvalidNetworkSettings",
                           f"The security group '{group_id}' is not in {vpc_id}, the VPC of "
                           f"subnet {subnets[0]}")
    return vpc_id


def _to_available(fsx: FsxState, key: tuple[str, str, str]) -> Any:
    def change() -> None:
        with fsx.lock:
            system = fsx.systems.get(key)
            if system is not None and system["Lifecycle"] == "CREATING":
                system["Lifecycle"] = "AVAILABLE"

    return change


def _gone(fsx: FsxState, key: tuple[str, str, str]) -> Any:
    def change() -> None:
        with fsx.lock:
            system = fsx.systems.get(key)
            if system is not None and system["Lifecycle"] == "DELETING":
                del fsx.systems[key]

    return change


@answers("fsx", "CreateFileSystem")
def create_file_system(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    if params["FileSystemType"] != "LUSTRE":
        raise _bad("The local AWS answers FSx for Lustre only (FileSystemType LUSTRE).")
    fsx = state(ctx)
    account, region = ctx.call.account, ctx.call.region
    token = params.get("ClientRequestToken")
    fingerprint = _fingerprint(params)
    with fsx.lock:
        if token and (account, region, token) in fsx.tokens:
            known, seen = fsx.tokens[(account, region, token)]
            if seen != fingerprint:
                raise AwsError("IncompatibleParameterError",
                               "The client request token was used before with other "
                               "parameters.")
            system = fsx.systems.get((account, region, known))
            if system is not None:
                return {"FileSystem": dict(system)}
    lustre = _check_lustre(params)
    vpc_id = _check_network(ctx, params)
    file_system_id = "fs-0" + secrets.token_hex(8)
    system = {
        "OwnerId": account,
        "CreationTime": datetime.now(UTC),
        "FileSystemId": file_system_id,
        "FileSystemType": "LUSTRE",
        "FileSystemTypeVersion": params.get("FileSystemTypeVersion") or LUSTRE_VERSION,
        "Lifecycle": "CREATING",
        "StorageCapacity": params["StorageCapacity"],
        "StorageType": params.get("StorageType") or "SSD",
        "VpcId": vpc_id,
        "SubnetIds": list(params["SubnetIds"]),
        "NetworkInterfaceIds": ["eni-0" + secrets.token_hex(8)],
        "DNSName": f"{file_system_id}.fsx.{region}.amazonaws.com",
        "ResourceARN": f"arn:aws:fsx:{region}:{account}:file-system/{file_system_id}",
        "Tags": [dict(t) for t in params.get("Tags") or ()],
        "LustreConfiguration": lustre,
        "NetworkType": "IPV4",
    }
    if params.get("KmsKeyId"):
        system["KmsKeyId"] = params["KmsKeyId"]
    key = (account, region, file_system_id)
    with fsx.lock:
        if token and (account, region, token) in fsx.tokens:  # a concurrent twin won
            known, _ = fsx.tokens[(account, region, token)]
            if (account, region, known) in fsx.systems:
                return {"FileSystem": dict(fsx.systems[(account, region, known)])}
        fsx.systems[key] = system
        if token:
            fsx.tokens[(account, region, token)] = (file_system_id, fingerprint)
        answer = dict(system)
    ctx.app.transitions.timeline.after(FSX_CREATING_S, _to_available(fsx, key))
    return {"FileSystem": answer}


@answers("fsx", "DescribeFileSystems")
def describe_file_systems(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    fsx = state(ctx)
    account, region = ctx.call.account, ctx.call.region
    with fsx.lock:
        mine = {k[2]: dict(v) for k, v in fsx.systems.items() if k[:2] == (account, region)}
    wanted = params.get("FileSystemIds")
    if wanted:
        missing = [i for i in wanted if i not in mine]
        if missing:
            raise _not_found(missing[0])
        systems = [mine[i] for i in wanted]
    else:
        systems = sorted(mine.values(), key=lambda s: s["CreationTime"])
    return ctx.page(systems, "FileSystems")


@answers("fsx", "DeleteFileSystem")
def delete_file_system(ctx: GapContext, params: dict[str, Any]) -> dict[str, Any]:
    fsx = state(ctx)
    key = (ctx.call.account, ctx.call.region, params["FileSystemId"])
    with fsx.lock:
        system = fsx.systems.get(key)
        if system is None:
            raise _not_found(params["FileSystemId"])
        lifecycle = system["Lifecycle"]
        if lifecycle in NOT_DELETABLE:
            raise _bad(f"Cannot delete file system {key[2]} while it is {lifecycle}.")
        started = lifecycle != "DELETING"
        system["Lifecycle"] = "DELETING"
    if started:
        ctx.app.transitions.timeline.after(FSX_DELETING_S, _gone(fsx, key))
    return {"FileSystemId": key[2], "Lifecycle": "DELETING", "LustreResponse": {}}
