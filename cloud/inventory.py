"""Which of some AWS resources still exist, and in what state — reads only.

A cluster's read asks this about what its create recorded making (tasks/clusters.py
`MADE_BY_STEP`), so that after a cancelled or failed create it can say what is left in AWS
and what of it is billed. EC2 is asked once per type with a filter on the ids (a filter
answers what exists; asking by id fails the whole call when one is gone), the answer checked
against the ids on our side; VPC endpoints (not every EC2 answers their id filter) and the
other services once per resource. A type that cannot be read now is reported as unknown with
the reason, never as gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cloud.aws import error_code, http_status, is_not_found

Clients = Callable[[str], Any]
"""service name → a boto3 client in the resources' region"""
Found = dict[str, str]
"""id → its state, for the ids that exist"""

VPC, SUBNET, INTERNET_GATEWAY, NAT_GATEWAY = "vpc", "subnet", "internet_gateway", "nat_gateway"
ELASTIC_IP, ROUTE_TABLE, SECURITY_GROUP = "elastic_ip", "route_table", "security_group"
VPC_ENDPOINT, IAM_ROLE, OIDC_PROVIDER, S3_BUCKET = ("vpc_endpoint", "iam_role", "oidc_provider",
                                                    "s3_bucket")
EKS_CLUSTER, HYPERPOD_CLUSTER, FSX_FILE_SYSTEM = ("eks_cluster", "hyperpod_cluster",
                                                  "fsx_file_system")
GONE = frozenset({"deleted"})
"""States in which AWS still lists a resource that no longer exists (a NAT gateway or an
endpoint stays listed for a while after its deletion)."""


def _ec2(operation: str, key: str, id_field: str, filter_name: str,
         state_of: Callable[[dict[str, Any]], str], filter_param: str = "Filters"
         ) -> Callable[[Clients, list[str]], Found]:
    def check(client: Clients, ids: list[str]) -> Found:
        reply = getattr(client("ec2"), operation)(
            **{filter_param: [{"Name": filter_name, "Values": ids}]})
        found = {item[id_field]: str(state_of(item)) for item in reply.get(key) or ()
                 if item.get(id_field) in ids}
        return {i: s for i, s in found.items() if s not in GONE}
    return check


def _each(read: Callable[[Clients, str], str | None]) -> Callable[[Clients, list[str]], Found]:
    """One call per resource; `read` answers its state, None (or not found) when gone."""
    def check(client: Clients, ids: list[str]) -> Found:
        found: Found = {}
        for one in ids:
            try:
                state = read(client, one)
            except ClientError as exc:
                if is_not_found(exc) or http_status(exc) == 404 \
                        or error_code(exc) == "FileSystemNotFound":
                    continue
                raise
            if state is not None and state not in GONE:
                found[one] = state
        return found
    return check


def _endpoint(client: Clients, endpoint_id: str) -> str | None:
    found = client("ec2").describe_vpc_endpoints(
        VpcEndpointIds=[endpoint_id]).get("VpcEndpoints") or []
    return str(found[0].get("State")).lower() if found else None


def _role(client: Clients, name: str) -> str:
    client("iam").get_role(RoleName=name)
    return "exists"


def _oidc(client: Clients, arn: str) -> str:
    client("iam").get_open_id_connect_provider(OpenIDConnectProviderArn=arn)
    return "exists"


def _bucket(client: Clients, name: str) -> str:
    client("s3").head_bucket(Bucket=name)
    return "exists"


def _eks(client: Clients, name: str) -> str:
    return client("eks").describe_cluster(name=name)["cluster"]["status"]


def _hyperpod(client: Clients, name: str) -> str:
    return client("sagemaker").describe_cluster(ClusterName=name)["ClusterStatus"]


def _fsx(client: Clients, file_system_id: str) -> str | None:
    systems = client("fsx").describe_file_systems(
        FileSystemIds=[file_system_id]).get("FileSystems") or []
    return systems[0].get("Lifecycle") if systems else None


CHECKS: dict[str, Callable[[Clients, list[str]], Found]] = {
    VPC: _ec2("describe_vpcs", "Vpcs", "VpcId", "vpc-id", lambda i: i.get("State")),
    SUBNET: _ec2("describe_subnets", "Subnets", "SubnetId", "subnet-id",
                 lambda i: i.get("State")),
    INTERNET_GATEWAY: _ec2("describe_internet_gateways", "InternetGateways",
                           "InternetGatewayId", "internet-gateway-id",
                           lambda i: "attached" if i.get("Attachments") else "detached"),
    NAT_GATEWAY: _ec2("describe_nat_gateways", "NatGateways", "NatGatewayId",
                      "nat-gateway-id", lambda i: i.get("State"), filter_param="Filter"),
    ELASTIC_IP: _ec2("describe_addresses", "Addresses", "AllocationId", "allocation-id",
                     lambda i: "associated" if i.get("AssociationId") else "unassociated"),
    ROUTE_TABLE: _ec2("describe_route_tables", "RouteTables", "RouteTableId", "route-table-id",
                      lambda i: "exists"),
    SECURITY_GROUP: _ec2("describe_security_groups", "SecurityGroups", "GroupId", "group-id",
                         lambda i: "exists"),
    VPC_ENDPOINT: _each(_endpoint),
    IAM_ROLE: _each(_role),
    OIDC_PROVIDER: _each(_oidc),
    S3_BUCKET: _each(_bucket),
    EKS_CLUSTER: _each(_eks),
    HYPERPOD_CLUSTER: _each(_hyperpod),
    FSX_FILE_SYSTEM: _each(_fsx),
}
"""type → how to read which of its ids exist (and their state)."""


def states(client: Clients, wanted: Iterable[tuple[str, str]]
           ) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, id) → {exists: True | False | None (could not be read now), state, note}."""
    by_type: dict[str, list[str]] = {}
    for kind, value in wanted:
        if value not in by_type.setdefault(kind, []):
            by_type[kind].append(value)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, ids in by_type.items():
        try:
            found = CHECKS[kind](client, ids)
        except (ClientError, BotoCoreError) as exc:
            note = f"could not be read now: {error_code(exc) or type(exc).__name__}: {exc}"
            out.update({(kind, i): {"exists": None, "state": None, "note": note[:300]}
                        for i in ids})
            continue
        out.update({(kind, i): {"exists": i in found, "state": found.get(i), "note": None}
                    for i in ids})
    return out
