"""Who an AWS access key is, as STS would say: the secret to check a signature with, and the
IAM principal (the ARN an EKS access entry names).

The sandbox's fixed key pair (from `sandbox.local_aws.client_env`), moto's conventional
`testing`/`testing`, and every key moto minted (IAM users' keys, AssumeRole credentials) are
known; any other key is unknown, as it would be to STS. The caller's ARN is what moto's STS
`GetCallerIdentity` reports for the key — for the sandbox's credentials that is
`arn:aws:sts::<account>:user/moto` — turned into the IAM form EKS matches access entries
on: an assumed role `arn:aws:sts::A:assumed-role/R/S` becomes `arn:aws:iam::A:role/R`, and a
user `arn:aws:sts::A:user/N` (moto's spelling) becomes `arn:aws:iam::A:user/N`.
"""

from __future__ import annotations

import os
import re

_STS_ASSUMED = re.compile(r"^arn:([^:]+):sts::(\d{12}):assumed-role/([^/]+)/.+$")
_STS_USER = re.compile(r"^arn:([^:]+):sts::(\d{12}):user/(.+)$")
_IAM = re.compile(r"^arn:([^:]+):iam::(\d{12}):(role|user)/(.+)$")


def sandbox_key_pair() -> tuple[str, str]:
    """The fixed credentials every sandboxed process uses."""
    from sandbox.local_aws import client_env  # late: local_aws imports the layer, which imports us

    env = client_env("http://127.0.0.1")
    return env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]


# moto's documented convention for fake credentials; sandboxed code that does not take
# `client_env`'s pair commonly uses this one.
MOTO_CONVENTIONAL_KEY_PAIR = ("testing", "testing")


def secret_for(access_key: str) -> str | None:
    """The secret key STS would check a signature by `access_key` with, if the key exists."""
    for akid, secret in (sandbox_key_pair(), MOTO_CONVENTIONAL_KEY_PAIR):
        if access_key == akid:
            return secret
    from moto.iam.models import iam_backends

    for _account, by_partition in list(iam_backends.items()):
        for _partition, backend in list(by_partition.items()):
            key = backend.access_keys.get(access_key)
            if key is not None:
                return str(key.secret_access_key)
    return None


def _account_for(access_key: str) -> str:
    if "MOTO_ACCOUNT_ID" in os.environ:
        return os.environ["MOTO_ACCOUNT_ID"]
    from moto.iam.models import get_account_id_from

    return get_account_id_from(access_key)


def caller_arn(access_key: str, region: str) -> str:
    """What STS `GetCallerIdentity` (moto's) answers as `Arn` for this key."""
    from moto.sts.models import sts_backends
    from moto.utilities.utils import get_partition

    backend = sts_backends[_account_for(access_key)][get_partition(region)]
    _user_id, arn, _account = backend.get_caller_identity(access_key, region)
    return str(arn)


def principal_arn(arn: str) -> str:
    """The IAM principal ARN an access entry names for a caller ARN."""
    found = _STS_ASSUMED.match(arn)
    if found:
        partition, account, role = found.groups()
        return f"arn:{partition}:iam::{account}:role/{role}"
    found = _STS_USER.match(arn)
    if found:
        partition, account, user = found.groups()
        return f"arn:{partition}:iam::{account}:user/{user}"
    return arn


def same_principal(entry_arn: str, principal: str) -> bool:
    """Does an access entry's principal ARN name this caller? (IAM paths do not matter:
    an assumed-role ARN carries the role name only.)"""
    a, b = _IAM.match(entry_arn), _IAM.match(principal)
    if a is None or b is None:
        return entry_arn == principal
    return (
        a.group(1, 2, 3) == b.group(1, 2, 3)
        and a.group(4).split("/")[-1] == b.group(4).split("/")[-1]
    )
