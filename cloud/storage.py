"""Shared storage: S3 buckets, FSx for Lustre, and the Kubernetes volumes that mount them.

- Buckets (`ensure_bucket`): names within S3's rules, public access blocked, default
  encryption on, hypd's tags; adopted when they already exist and carry those tags, refused
  when a bucket of that name is someone else's. Also used for the lifecycle-script bucket.
- The shared bucket reaches pods through the **Mountpoint for Amazon S3 CSI driver**
  (`s3.csi.aws.com`), which supports static provisioning only: a PersistentVolume naming the
  bucket (`csi.volumeAttributes.bucketName`) bound through `claimRef` to one
  PersistentVolumeClaim, `storageClassName: ""`, `ReadWriteMany`, mount options as the
  driver passes them to Mountpoint (`allow-delete`, `allow-overwrite`, `allow-other`,
  `region <r>`, `prefix <p>/`). Pods mount the claim at `/s3` (`pod_volume`, `volume_mount`).
- FSx for Lustre (`ensure_fsx`): one file system adopted by its tags or created with a client
  request token, and its PersistentVolume for the FSx CSI driver (`fsx.csi.aws.com`,
  `volumeHandle` = file system id, `volumeAttributes.dnsname` / `mountname`).
- `storage_users` says who mounts a claim (`claim_users` reads the cluster's pods, jobs,
  deployments and statefulsets first), so storage in use is never removed.
- `volumes` reads hypd's storage items back from their labelled PVs and PVCs;
  `fsx_placement` chooses a file system's subnet (the cluster's compute subnet, else its
  first private one) and security group (the nodes'); `storage_bucket_name` names the bucket
  hypd makes for a storage item.

Manifests are plain dicts for `cloud.kube.server_side_apply` (PV before PVC); nothing here
talks to Kubernetes except `delete_volume`, `volumes`, `workloads` and `claim_users`, which
take the caller's `ApiClient`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from cloud import kube
from cloud.aws import (
    CLUSTER_TAG,
    MANAGED_BY,
    MANAGED_BY_VALUE,
    ROLE_TAG,
    error_code,
    http_status,
    is_not_found,
)
from cloud.capacity import ROLE_COMPUTE_SUBNET
from cloud.errors import NotYet, Refusal
from vocabulary import patterns

# -- errors ----------------------------------------------------------------------------------


class StorageError(Refusal):
    """A storage request hypd refuses, or a resource that is not hypd's to touch."""

    default_code = "storage_conflict"


# -- bucket names ------------------------------------------------------------------------------

BUCKET_MIN, BUCKET_MAX = 3, 63
_BUCKET_BAD_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_BAD_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
DIGEST_CHARS = 10


def bucket_name_problem(name: str) -> str | None:
    """Why `name` is not a valid general-purpose S3 bucket name, or None."""
    if not isinstance(name, str) or not BUCKET_MIN <= len(name) <= BUCKET_MAX:
        return f"a bucket name has {BUCKET_MIN}-{BUCKET_MAX} characters"
    if not patterns.S3_BUCKET.fullmatch(name):
        return ("a bucket name has only lowercase letters, digits, dots and hyphens, and "
                "starts and ends with a letter or digit")
    if ".." in name or ".-" in name or "-." in name:
        return "a bucket name has no two adjacent dots, nor a dot next to a hyphen"
    try:
        ipaddress.IPv4Address(name)
        return "a bucket name is not an IP address"
    except ValueError:
        pass
    for prefix in _BUCKET_BAD_PREFIXES:
        if name.startswith(prefix):
            return f"a bucket name does not start with {prefix!r}"
    for suffix in _BUCKET_BAD_SUFFIXES:
        if name.endswith(suffix):
            return f"a bucket name does not end with {suffix!r}"
    return None


def validate_bucket_name(name: str) -> str:
    problem = bucket_name_problem(name)
    if problem:
        raise StorageError(f"{name!r} is not a valid S3 bucket name: {problem}",
                           "validation_failed")
    return name


def bucket_name(prefix: str, cluster: str, account_id: str, region: str,
                key: str | None = None) -> str:
    """A bucket name for `cluster` that is valid and (bucket names being global) unique:
    `<prefix><cluster>-<digest of account, region, key>` (`key` defaults to the cluster),
    the cluster part shortened when the whole would pass 63 characters. Deterministic, so a
    retry finds the same bucket.
    """
    seed = cluster if key is None else key
    digest = hashlib.sha256(f"{account_id}:{region}:{seed}".encode()).hexdigest()
    room = BUCKET_MAX - len(prefix) - 1 - DIGEST_CHARS
    middle = re.sub(r"[^a-z0-9-]", "-", cluster.lower())[:max(room, 0)].strip("-")
    name = f"{prefix}{middle}-{digest[:DIGEST_CHARS]}" if middle else \
        f"{prefix}{digest[:DIGEST_CHARS]}"
    return validate_bucket_name(name)


def shared_bucket_name(cluster: str, account_id: str, region: str) -> str:
    """The default name of a cluster's shared data bucket (`hypd-<cluster>-<digest>`)."""
    return bucket_name("hypd-", cluster, account_id, region)


def storage_bucket_name(cluster: str, storage: str, account_id: str, region: str) -> str:
    """The bucket hypd makes for a cluster's storage item `storage`
    (`hypd-<cluster>-<storage>-<digest>`, shortened to fit)."""
    return bucket_name("hypd-", f"{cluster}-{storage}", account_id, region,
                       key=f"{cluster}/{storage}")


def tls_bucket_name(cluster: str, account_id: str, region: str) -> str:
    """The bucket the cluster's HyperPod inference operator keeps its TLS certificates in
    (`hyperpod-tls-hypd-<cluster>-<digest>`): AWS's policy for the operator's role reaches
    only buckets named `hyperpod-tls*`."""
    return bucket_name("hyperpod-tls-hypd-", cluster, account_id, region, key=f"{cluster}/tls")


# -- buckets ---------------------------------------------------------------------------------

PUBLIC_ACCESS_BLOCK = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}
ENCRYPTION = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"},
                         "BucketKeyEnabled": True}]}


def bucket_info(s3: Any, name: str) -> dict[str, Any] | None:
    """{name, region, tags, managed} of a bucket this account can see, or None when there is
    no such bucket. Raises StorageError when the bucket exists but belongs to someone else."""
    try:
        s3.head_bucket(Bucket=name)
    except ClientError as exc:
        status = http_status(exc)
        if status == 404 or is_not_found(exc) or error_code(exc) == "404":
            return None
        if status == 403 or error_code(exc) in ("403", "AccessDenied", "Forbidden"):
            raise StorageError(f"bucket {name!r} exists and belongs to another account (or "
                               f"this role may not read it): choose another name") from exc
        raise
    location = s3.get_bucket_location(Bucket=name).get("LocationConstraint") or "us-east-1"
    if location == "EU":
        location = "eu-west-1"
    tags = _bucket_tags(s3, name)
    return {"name": name, "region": location, "tags": tags,
            "managed": tags.get(MANAGED_BY) == MANAGED_BY_VALUE}


def ensure_bucket(s3: Any, name: str, region: str,
                  tags: list[dict[str, str]]) -> dict[str, Any]:
    """The bucket `name` in `region`: created with `tags` if absent, else adopted when it
    carries every one of them. Either way public access is blocked, default encryption
    (SSE-S3) is on and the tags are present; settings already right are not written again.
    Returns {name, region, created}."""
    validate_bucket_name(name)
    wanted = {t["Key"]: t["Value"] for t in tags}
    if wanted.get(MANAGED_BY) != MANAGED_BY_VALUE:
        raise ValueError("a hypd bucket is tagged hypd:managed-by=hypd")
    info = bucket_info(s3, name)
    created = False
    if info is None:
        # tagged as it is made: a bucket made untagged and tagged by a second call is, after
        # a crash between the two, a bucket hypd refuses as not its own (found by the fault
        # campaign, tests/faults/)
        configuration: dict[str, Any] = {"Tags": [{"Key": k, "Value": v}
                                                  for k, v in wanted.items()]}
        if region != "us-east-1":
            configuration["LocationConstraint"] = region
        try:
            s3.create_bucket(Bucket=name, CreateBucketConfiguration=configuration)
            created = True
        except ClientError as exc:
            code = error_code(exc)
            if code == "BucketAlreadyExists":
                raise StorageError(f"bucket name {name!r} is taken by another account") from exc
            if code != "BucketAlreadyOwnedByYou":  # a concurrent retry of ours made it
                raise
        current_tags: dict[str, str] = {}
    else:
        if info["region"] != region:
            raise StorageError(f"bucket {name!r} already exists in {info['region']}, not in "
                               f"{region}")
        mismatch = {k: v for k, v in wanted.items() if info["tags"].get(k) != v}
        if mismatch:
            raise StorageError(
                f"bucket {name!r} already exists and is not tagged as this hypd resource "
                f"(missing {', '.join(sorted(mismatch))}): hypd does not take over buckets it "
                f"did not make")
        current_tags = info["tags"]
    _ensure_public_access_block(s3, name)
    _ensure_encryption(s3, name)
    merged = {**current_tags, **wanted}
    if merged != current_tags:
        s3.put_bucket_tagging(Bucket=name, Tagging={
            "TagSet": [{"Key": k, "Value": v} for k, v in merged.items()]})
    return {"name": name, "region": region, "created": created}


def delete_bucket(s3: Any, name: str, tags: list[dict[str, str]], empty: bool = True) -> bool:
    """Delete a bucket hypd made (it must carry every one of `tags`), first deleting every
    object version when `empty`. False when it was already gone."""
    try:
        info = bucket_info(s3, name)
    except StorageError:
        return False  # not visible to us: nothing of ours to delete
    if info is None:
        return False
    wanted = {t["Key"]: t["Value"] for t in tags}
    if any(info["tags"].get(k) != v for k, v in wanted.items()):
        raise StorageError(f"bucket {name!r} is not tagged as this hypd resource: not deleting")
    if empty:
        delete_objects(s3, name)
    try:
        s3.delete_bucket(Bucket=name)
    except ClientError as exc:
        if error_code(exc) == "NoSuchBucket":
            return False
        if error_code(exc) == "BucketNotEmpty":
            raise NotYet(f"bucket {name!r} is not empty yet", 5.0) from exc
        raise
    return True


def _bucket_tags(s3: Any, name: str) -> dict[str, str]:
    try:
        tag_set = s3.get_bucket_tagging(Bucket=name).get("TagSet") or []
    except ClientError as exc:
        if error_code(exc) in ("NoSuchTagSet", "NoSuchTagSetError"):
            return {}
        raise
    return {t["Key"]: t["Value"] for t in tag_set}


def _ensure_public_access_block(s3: Any, name: str) -> None:
    try:
        current = s3.get_public_access_block(Bucket=name).get(
            "PublicAccessBlockConfiguration") or {}
    except ClientError as exc:
        if error_code(exc) != "NoSuchPublicAccessBlockConfiguration":
            raise
        current = {}
    if any(current.get(k) is not True for k in PUBLIC_ACCESS_BLOCK):
        s3.put_public_access_block(Bucket=name,
                                   PublicAccessBlockConfiguration=dict(PUBLIC_ACCESS_BLOCK))


def _ensure_encryption(s3: Any, name: str) -> None:
    try:
        rules = s3.get_bucket_encryption(Bucket=name).get(
            "ServerSideEncryptionConfiguration", {}).get("Rules") or []
    except ClientError as exc:
        if error_code(exc) != "ServerSideEncryptionConfigurationNotFoundError":
            raise
        rules = []
    encrypted = any((r.get("ApplyServerSideEncryptionByDefault") or {}).get("SSEAlgorithm")
                    for r in rules)
    if not encrypted:
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration=ENCRYPTION)


def delete_objects(s3: Any, name: str, prefix: str = "") -> int:
    """Delete every object version (and delete marker) under `prefix` of bucket `name`, for
    good; how many went."""
    pages = s3.get_paginator("list_object_versions").paginate(Bucket=name, Prefix=prefix)
    batch: list[dict[str, str]] = []
    removed = 0
    for page in pages:
        for item in (page.get("Versions") or []) + (page.get("DeleteMarkers") or []):
            batch.append({"Key": item["Key"], "VersionId": item["VersionId"]})
            if len(batch) == 1000:  # DeleteObjects takes at most 1000 keys
                s3.delete_objects(Bucket=name, Delete={"Objects": batch, "Quiet": True})
                removed += len(batch)
                batch = []
    if batch:
        s3.delete_objects(Bucket=name, Delete={"Objects": batch, "Quiet": True})
        removed += len(batch)
    return removed


# -- Kubernetes volumes ------------------------------------------------------------------------

S3_CSI_DRIVER = "s3.csi.aws.com"
FSX_CSI_DRIVER = "fsx.csi.aws.com"
DEFAULT_MOUNT_PATH = "/s3"
DEFAULT_CLAIM = "hypd-s3"
DEFAULT_NAMESPACE = "default"
S3_NOMINAL_CAPACITY = "1200Gi"
"""The S3 CSI driver ignores capacity, but Kubernetes requires one on a PV and its PVC."""

LABEL_MANAGED_BY = kube.MANAGED_BY_LABEL
LABEL_STORAGE = "hypd.io/storage"
LABEL_STORAGE_KIND = "hypd.io/storage-kind"
LABEL_CLUSTER = "hypd.io/cluster"



def _check_k8s_name(value: str, what: str, limit: int = 63) -> str:
    if not isinstance(value, str) or len(value) > limit or not patterns.DNS_LABEL.fullmatch(value):
        raise StorageError(f"{what} {value!r} must be a DNS label (lowercase letters, digits "
                           f"and hyphens, at most {limit} characters)", "validation_failed")
    return value


def volume_name(namespace: str, claim_name: str) -> str:
    """The PersistentVolume behind a claim: PVs are cluster-wide, claims per namespace."""
    return f"hypd-{namespace}-{claim_name}"


def labels(cluster: str | None, storage: str, kind: str) -> dict[str, str]:
    found = {LABEL_MANAGED_BY: kube.MANAGED_BY_VALUE, LABEL_STORAGE: storage,
             LABEL_STORAGE_KIND: kind}
    if cluster:
        found[LABEL_CLUSTER] = cluster
    return found


def s3_volume(
    bucket: str,
    region: str,
    *,
    claim_name: str = DEFAULT_CLAIM,
    namespace: str = DEFAULT_NAMESPACE,
    prefix: str | None = None,
    read_only: bool = False,
    cluster: str | None = None,
) -> list[dict[str, Any]]:
    """[PersistentVolume, PersistentVolumeClaim] mounting `bucket` through the Mountpoint for
    S3 CSI driver (static provisioning). Apply the PV first."""
    validate_bucket_name(bucket)
    _check_k8s_name(claim_name, "claim name")
    _check_k8s_name(namespace, "namespace")
    pv = volume_name(namespace, claim_name)
    mode = "ReadOnlyMany" if read_only else "ReadWriteMany"
    options = ["read-only"] if read_only else ["allow-delete", "allow-overwrite"]
    options += ["allow-other", f"region {region}"]
    if prefix:
        clean = prefix.strip("/")
        if not clean or any(c in clean for c in " \n\t"):
            raise StorageError(f"bucket prefix {prefix!r} is not usable", "validation_failed")
        options.append(f"prefix {clean}/")
    meta_labels = labels(cluster, claim_name, "s3")
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv, "labels": dict(meta_labels)},
        "spec": {
            "capacity": {"storage": S3_NOMINAL_CAPACITY},
            "accessModes": [mode],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": namespace, "name": claim_name},
            "mountOptions": options,
            "csi": {
                "driver": S3_CSI_DRIVER,
                "volumeHandle": pv,  # unique per PV, as the CSI spec requires
                "volumeAttributes": {"bucketName": bucket},
            },
        },
    }
    return [volume, _claim(claim_name, namespace, pv, mode, S3_NOMINAL_CAPACITY, meta_labels)]


def _claim(name: str, namespace: str, pv: str, mode: str, capacity: str,
           meta_labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(meta_labels)},
        "spec": {
            "accessModes": [mode],
            "storageClassName": "",
            "volumeName": pv,
            "resources": {"requests": {"storage": capacity}},
        },
    }


def pod_volume(claim_name: str = DEFAULT_CLAIM, name: str = "s3",
               read_only: bool = False) -> dict[str, Any]:
    """A pod-spec `volumes` entry for a claim (job and deployment builders use it)."""
    claim: dict[str, Any] = {"claimName": claim_name}
    if read_only:
        claim["readOnly"] = True
    return {"name": name, "persistentVolumeClaim": claim}


def volume_mount(mount_path: str = DEFAULT_MOUNT_PATH, name: str = "s3",
                 read_only: bool = False) -> dict[str, Any]:
    """A container `volumeMounts` entry (default: the shared bucket at /s3)."""
    mount: dict[str, Any] = {"name": name, "mountPath": mount_path}
    if read_only:
        mount["readOnly"] = True
    return mount


def delete_volume(api_client: Any, claim_name: str,
                  namespace: str = DEFAULT_NAMESPACE) -> dict[str, bool]:
    """Delete a claim and its PersistentVolume (claim first, so the PV is released), each
    tolerant of being gone already. The bucket or file system behind them is untouched.
    Returns {claim, volume}: True where a deletion was accepted."""
    return {
        "claim": kube.delete_object(api_client, "v1", "PersistentVolumeClaim", claim_name,
                                    namespace),
        "volume": kube.delete_object(api_client, "v1", "PersistentVolume",
                                     volume_name(namespace, claim_name)),
    }


STORAGE_SELECTOR = f"{LABEL_MANAGED_BY}={kube.MANAGED_BY_VALUE},{LABEL_STORAGE}"


def volumes(api_client: Any) -> list[dict[str, Any]]:
    """hypd's storage items in a cluster as its Kubernetes objects say, one per storage name:
    {name, kind, namespace, claim, volume, claim_exists, volume_exists, claim_phase,
    volume_phase, capacity, bucket, prefix, read_only, file_system_id, dns_name, mount_name}
    (the backing fields that do not apply are None). Read from the PersistentVolumes and
    PersistentVolumeClaims labelled managed-by hypd with a storage name."""
    pvs = kube.list_objects(api_client, "v1", "PersistentVolume", label_selector=STORAGE_SELECTOR)
    claims = kube.list_objects(api_client, "v1", "PersistentVolumeClaim",
                               label_selector=STORAGE_SELECTOR)
    items: dict[str, dict[str, Any]] = {}
    for pv in pvs:
        meta, spec = pv.get("metadata") or {}, pv.get("spec") or {}
        found = meta.get("labels") or {}
        ref = spec.get("claimRef") or {}
        csi = spec.get("csi") or {}
        attributes = csi.get("volumeAttributes") or {}
        options = spec.get("mountOptions") or []
        prefix = next((o[len("prefix "):].rstrip("/") for o in options
                       if o.startswith("prefix ")), None)
        kind = found.get(LABEL_STORAGE_KIND) or ("fsx" if csi.get("driver") == FSX_CSI_DRIVER
                                                 else "s3")
        items[found[LABEL_STORAGE]] = {
            "name": found[LABEL_STORAGE], "kind": kind,
            "namespace": ref.get("namespace") or DEFAULT_NAMESPACE,
            "claim": ref.get("name") or found[LABEL_STORAGE], "volume": meta.get("name"),
            "volume_exists": True, "claim_exists": False,
            "volume_phase": (pv.get("status") or {}).get("phase"), "claim_phase": None,
            "capacity": (spec.get("capacity") or {}).get("storage"),
            "bucket": attributes.get("bucketName") if kind == "s3" else None,
            "prefix": prefix if kind == "s3" else None,
            "read_only": "read-only" in options if kind == "s3" else None,
            "file_system_id": csi.get("volumeHandle") if kind == "fsx" else None,
            "dns_name": attributes.get("dnsname") if kind == "fsx" else None,
            "mount_name": attributes.get("mountname") if kind == "fsx" else None,
        }
    for claim in claims:
        meta = claim.get("metadata") or {}
        name = (meta.get("labels") or {})[LABEL_STORAGE]
        item = items.get(name)
        if item is None:  # a claim whose volume is gone
            kind = (meta.get("labels") or {}).get(LABEL_STORAGE_KIND) or "s3"
            item = items[name] = {
                "name": name, "kind": kind, "namespace": meta.get("namespace"),
                "claim": meta.get("name"), "volume": (claim.get("spec") or {}).get("volumeName"),
                "volume_exists": False, "volume_phase": None,
                "capacity": ((claim.get("spec") or {}).get("resources") or {}).get(
                    "requests", {}).get("storage"),
                "bucket": None, "prefix": None, "read_only": None, "file_system_id": None,
                "dns_name": None, "mount_name": None,
            }
        if (item["namespace"], item["claim"]) == (meta.get("namespace"), meta.get("name")):
            item["claim_exists"] = True
            item["claim_phase"] = (claim.get("status") or {}).get("phase")
    return sorted(items.values(), key=lambda i: i["name"])


# -- who mounts a claim ------------------------------------------------------------------------

_FINISHED_PHASES = ("Succeeded", "Failed")


def storage_users(objects: Iterable[Any], claim_name: str,
                  namespace: str | None = None) -> list[str]:
    """Names (`<kind>/<namespace>/<name>`) of the workloads among `objects` that mount
    `claim_name`: pods, jobs, deployments, HyperPodPyTorchJobs, RayJobs, inference endpoints
    — anything whose spec holds a `volumes` entry with that `persistentVolumeClaim`. Objects
    may be dicts (camelCase, as the API returns them) or kubernetes client models. Finished
    pods and jobs are not users; with `namespace`, objects in other namespaces are ignored
    (a claim belongs to one namespace)."""
    users = set()
    for obj in objects:
        data = _as_dict(obj)
        meta = data.get("metadata") or {}
        obj_ns = meta.get("namespace") or DEFAULT_NAMESPACE
        if namespace is not None and obj_ns != namespace:
            continue
        if _finished(data):
            continue
        if _mounts(data.get("spec"), claim_name):
            kind = (data.get("kind") or "object").lower()
            users.add(f"{kind}/{obj_ns}/{meta.get('name', '?')}")
    return sorted(users)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "to_dict"):
        from kubernetes.client import ApiClient  # models → the API's camelCase

        return ApiClient().sanitize_for_serialization(obj)
    raise TypeError(f"cannot read a Kubernetes object from {type(obj).__name__}")


def _finished(data: Mapping[str, Any]) -> bool:
    status = data.get("status") or {}
    kind = data.get("kind")
    if kind == "Pod":
        return status.get("phase") in _FINISHED_PHASES
    if kind == "Job":
        return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                   for c in status.get("conditions") or ())
    return False


def _mounts(node: Any, claim_name: str) -> bool:
    if isinstance(node, Mapping):
        volumes = node.get("volumes")
        if isinstance(volumes, list) and any(
                isinstance(v, Mapping)
                and ((v.get("persistentVolumeClaim") or {}).get("claimName") == claim_name)
                for v in volumes):
            return True
        return any(_mounts(v, claim_name) for k, v in node.items() if k != "volumes")
    if isinstance(node, list):
        return any(_mounts(v, claim_name) for v in node)
    return False


USER_KINDS = (("v1", "Pod"), ("batch/v1", "Job"), ("apps/v1", "Deployment"),
              ("apps/v1", "StatefulSet"))
"""The workloads that can hold a claim: a storage item they mount is not removed."""


def workloads(api_client: Any, namespace: str | None = None) -> list[dict[str, Any]]:
    """Every pod, job, deployment and statefulset (in `namespace`, or everywhere)."""
    found: list[dict[str, Any]] = []
    for api_version, kind in USER_KINDS:
        found += kube.list_objects(api_client, api_version, kind, namespace)
    return found


def claim_users(api_client: Any, claim_name: str, namespace: str) -> list[str]:
    """`storage_users` of one claim, read from the cluster now."""
    return storage_users(workloads(api_client, namespace), claim_name, namespace)


# -- FSx for Lustre ----------------------------------------------------------------------------

FSX_DEPLOYMENT_TYPES = ("SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
FSX_THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}
"""MB/s per TiB allowed for each persistent SSD deployment type (the first is the default)."""
FSX_GONE = ("DELETING",)
FSX_LIVE = ("AVAILABLE", "CREATING", "UPDATING")
FSX_BUSY = ("CREATING", "UPDATING")


def fsx_capacity_problem(capacity_gib: int, deployment_type: str) -> str | None:
    """FSx for Lustre SSD sizes: 1200, 2400, then steps of 3600 (SCRATCH_1) or 2400 GiB."""
    if isinstance(capacity_gib, bool) or not isinstance(capacity_gib, int) or capacity_gib <= 0:
        return "storage capacity is a positive whole number of GiB"
    step = 3600 if deployment_type == "SCRATCH_1" else 2400
    if capacity_gib in (1200, 2400) or capacity_gib % step == 0:
        return None
    return f"{deployment_type} storage capacity is 1200, 2400 or a multiple of {step} GiB"


def ensure_fsx(
    fsx: Any,
    subnet_id: str,
    sg_id: str,
    capacity_gib: int,
    deployment_type: str,
    tags: list[dict[str, str]],
    client_request_token: str,
    per_unit_throughput: int | None = None,
) -> dict[str, Any]:
    """An FSx for Lustre file system carrying every one of `tags`: adopted if one exists (and
    is not being deleted), else created with `client_request_token` (AWS answers a retried
    create with the same file system). The security group must allow Lustre traffic among
    its members (ports 988 and 1018-1023; hypd's network group allows all of it).
    Returns the `fsx_info` shape; `lifecycle` is `CREATING` for a while (see `fsx_state`)."""
    if deployment_type not in FSX_DEPLOYMENT_TYPES:
        raise StorageError(f"FSx deployment type must be one of {', '.join(FSX_DEPLOYMENT_TYPES)}",
                           "validation_failed")
    problem = fsx_capacity_problem(capacity_gib, deployment_type)
    if problem:
        raise StorageError(problem, "validation_failed")
    lustre: dict[str, Any] = {"DeploymentType": deployment_type, "DataCompressionType": "LZ4"}
    allowed = FSX_THROUGHPUT.get(deployment_type)
    if allowed:
        throughput = per_unit_throughput or allowed[0]
        if throughput not in allowed:
            raise StorageError(f"{deployment_type} throughput must be one of {allowed} MB/s/TiB",
                               "validation_failed")
        lustre["PerUnitStorageThroughput"] = throughput
    elif per_unit_throughput is not None:
        raise StorageError(f"{deployment_type} has no per-unit throughput setting",
                           "validation_failed")
    if not tags:
        raise ValueError("a hypd file system is found again by its tags: give some")
    found = find_fsx(fsx, tags)
    if found:
        return fsx_info(found[0])
    reply = fsx.create_file_system(
        ClientRequestToken=client_request_token[:63],
        FileSystemType="LUSTRE",
        StorageCapacity=capacity_gib,
        StorageType="SSD",
        SubnetIds=[subnet_id],
        SecurityGroupIds=[sg_id],
        LustreConfiguration=lustre,
        Tags=list(tags),
    )
    return fsx_info(reply["FileSystem"])


def find_fsx(fsx: Any, tags: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Lustre file systems carrying every one of `tags` that are not being deleted."""
    wanted = {t["Key"]: t["Value"] for t in tags}
    found = []
    for page in fsx.get_paginator("describe_file_systems").paginate():
        for fs in page.get("FileSystems") or ():
            have = {t["Key"]: t["Value"] for t in fs.get("Tags") or ()}
            if (fs.get("FileSystemType") == "LUSTRE" and fs.get("Lifecycle") not in FSX_GONE
                    and all(have.get(k) == v for k, v in wanted.items())):
                found.append(fs)
    return sorted(found, key=lambda f: f["FileSystemId"])


def fsx_info(fs: Mapping[str, Any]) -> dict[str, Any]:
    lustre = fs.get("LustreConfiguration") or {}
    return {
        "id": fs["FileSystemId"],
        "lifecycle": fs.get("Lifecycle"),
        "dns_name": fs.get("DNSName"),
        "mount_name": lustre.get("MountName"),
        "capacity_gib": fs.get("StorageCapacity"),
        "deployment_type": lustre.get("DeploymentType"),
        "subnet_ids": list(fs.get("SubnetIds") or ()),
        "failure": (fs.get("FailureDetails") or {}).get("Message"),
    }


def fsx_state(fsx: Any, file_system_id: str) -> dict[str, Any] | None:
    """The file system's `fsx_info` (lifecycle AVAILABLE | CREATING | FAILED | DELETING |
    MISCONFIGURED | UPDATING | MISCONFIGURED_UNAVAILABLE), or None when it does not exist."""
    try:
        reply = fsx.describe_file_systems(FileSystemIds=[file_system_id])
    except ClientError as exc:
        if error_code(exc) == "FileSystemNotFound" or is_not_found(exc):
            return None
        raise
    systems = reply.get("FileSystems") or []
    return fsx_info(systems[0]) if systems else None


def delete_fsx(fsx: Any, file_system_id: str, tags: list[dict[str, str]]) -> bool:
    """Delete a hypd file system (it must carry every one of `tags`). False when it was gone
    already (or is being deleted)."""
    try:
        reply = fsx.describe_file_systems(FileSystemIds=[file_system_id])
    except ClientError as exc:
        if error_code(exc) == "FileSystemNotFound" or is_not_found(exc):
            return False
        raise
    systems = reply.get("FileSystems") or []
    if not systems or systems[0].get("Lifecycle") in FSX_GONE:
        return False
    have = {t["Key"]: t["Value"] for t in systems[0].get("Tags") or ()}
    if any(have.get(t["Key"]) != t["Value"] for t in tags):
        raise StorageError(f"file system {file_system_id} is not tagged as this hypd resource: "
                           "not deleting")
    if systems[0].get("Lifecycle") in FSX_BUSY:  # AWS refuses to delete it until it settles
        raise NotYet(f"file system {file_system_id} is {systems[0]['Lifecycle']}; it can be "
                       "deleted once that ends", 30.0)
    try:
        fsx.delete_file_system(FileSystemId=file_system_id)
    except ClientError as exc:
        if error_code(exc) == "FileSystemNotFound" or is_not_found(exc):
            return False
        raise
    return True


def fsx_volume(
    file_system_id: str,
    dns_name: str,
    mount_name: str,
    capacity_gib: int,
    *,
    claim_name: str,
    namespace: str = DEFAULT_NAMESPACE,
    cluster: str | None = None,
) -> list[dict[str, Any]]:
    """[PersistentVolume, PersistentVolumeClaim] for an existing FSx for Lustre file system
    through the FSx CSI driver (static provisioning)."""
    if not re.match(r"^fs-[0-9a-f]{8,21}$", file_system_id or ""):
        raise StorageError(f"{file_system_id!r} is not an FSx file system id", "validation_failed")
    if not dns_name or not mount_name:
        raise NotYet(f"file system {file_system_id} has no DNS name or mount name yet", 30.0)
    _check_k8s_name(claim_name, "claim name")
    _check_k8s_name(namespace, "namespace")
    pv = volume_name(namespace, claim_name)
    capacity = f"{int(capacity_gib)}Gi"
    meta_labels = labels(cluster, claim_name, "fsx")
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv, "labels": dict(meta_labels)},
        "spec": {
            "capacity": {"storage": capacity},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": namespace, "name": claim_name},
            "mountOptions": ["flock"],
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": file_system_id,
                "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
            },
        },
    }
    return [volume, _claim(claim_name, namespace, pv, "ReadWriteMany", capacity, meta_labels)]


def fsx_placement(ec2: Any, cluster_name: str, cluster: Mapping[str, Any]) -> dict[str, str]:
    """Where a cluster's file system goes: {subnet_id, security_group_id}. The subnet is the
    cluster's compute subnet (hypd's, by tags: beside the instances), else the first private
    subnet of the EKS cluster; the security group is the one the cluster's nodes use (the
    first of the EKS cluster's, else its cluster security group)."""
    vpc_config = cluster.get("resourcesVpcConfig") or {}
    compute = ec2.describe_subnets(Filters=[
        {"Name": f"tag:{MANAGED_BY}", "Values": [MANAGED_BY_VALUE]},
        {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster_name]},
        {"Name": f"tag:{ROLE_TAG}", "Values": [ROLE_COMPUTE_SUBNET]},
    ])["Subnets"]
    subnet_id = min((s["SubnetId"] for s in compute), default=None)
    given = list(vpc_config.get("subnetIds") or ())
    if subnet_id is None and given:
        described = {s["SubnetId"]: s for s in ec2.describe_subnets(SubnetIds=given)["Subnets"]}
        private = [i for i in given if not described.get(i, {}).get("MapPublicIpOnLaunch")]
        subnet_id = (private or given)[0]
    group_id = next(iter(vpc_config.get("securityGroupIds") or ()), None) or \
        vpc_config.get("clusterSecurityGroupId")
    if not subnet_id or not group_id:
        raise StorageError(f"cannot place a file system for cluster {cluster_name}: it has no "
                           f"{'subnet' if not subnet_id else 'security group'} hypd can find",
                           "conflict")
    return {"subnet_id": subnet_id, "security_group_id": group_id}
