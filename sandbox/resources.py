"""Which AWS resources a call touched, so mutations can be counted per resource.

"This VPC was created once" is the property the fault tests prove, so each logged call carries
the ids of the resources it acted on. For EC2 these are read from the call itself: a call that
creates something (Create*, Allocate*) touched the ids that appear in its answer but not in its
request (and, for the calls in `_CREATED_PREFIX`, of the kind it creates) — CreateSubnet
answers with the new subnet and the VPC it was asked for, and only the subnet is new; any other
call touched the ids it named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# moto and AWS mint these as "<prefix>-" + 8 or 17 lowercase hex digits.
_EC2_ID = re.compile(
    r"(?<![\w-])(?:vpc|subnet|igw|nat|eipalloc|rtb|rtbassoc|sg|vpce)-[0-9a-f]{8,17}(?![\w-])"
)
_CREATING_PREFIXES = ("Create", "Allocate")
# What each creating call creates: its answer also names related resources (CreateNatGateway
# answers with the NAT gateway's VPC), which it did not create.
_CREATED_PREFIX: dict[str, str] = {
    "CreateVpc": "vpc-",
    "CreateSubnet": "subnet-",
    "CreateInternetGateway": "igw-",
    "CreateNatGateway": "nat-",
    "AllocateAddress": "eipalloc-",
    "CreateRouteTable": "rtb-",
    "CreateSecurityGroup": "sg-",
    "CreateVpcEndpoint": "vpce-",
}
_READ_PREFIXES = ("Describe", "List", "Get", "Search", "Head")


def is_mutation(action: str) -> bool:
    """True for actions that change AWS state (everything but Describe/List/Get/Search/Head)."""
    return not action.startswith(_READ_PREFIXES)


def ec2_ids(text: str) -> list[str]:
    """EC2 resource ids in `text`, in order of appearance, without repeats."""
    return list(dict.fromkeys(_EC2_ID.findall(text)))


def _values(params: dict[str, Any]) -> Iterable[str]:
    for value in params.values():
        if isinstance(value, dict):
            yield from _values(value)
        elif isinstance(value, list):
            yield from (str(v) for v in value)
        else:
            yield str(value)


def resource_ids(service: str, action: str, params: dict[str, Any], answer: bytes) -> list[str]:
    """The ids of the resources a call acted on (EC2 only; [] elsewhere)."""
    if service != "ec2":
        return []
    named = ec2_ids(" ".join(_values(params)))
    if action.startswith(_CREATING_PREFIXES):
        prefix = _CREATED_PREFIX.get(action, "")
        created = [
            i
            for i in ec2_ids(answer.decode("utf-8", "replace"))
            if i not in named and i.startswith(prefix)
        ]
        if created:
            return created
    return named
