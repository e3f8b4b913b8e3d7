"""Unit tests: naming calls, finding resource ids, shaping errors — no server needed."""

from __future__ import annotations

import pytest
from botocore import parsers
from botocore.awsrequest import HeadersDict

from sandbox.errors import defaults, error_reply
from sandbox.identify import RestRoutes, credential_scope
from sandbox.resources import is_mutation, resource_ids

ROUTES = RestRoutes()
NO_HEADERS: frozenset[str] = frozenset()


@pytest.mark.parametrize(
    ("service", "method", "path", "query", "headers", "action", "labels"),
    [
        ("eks", "POST", "/clusters", {}, NO_HEADERS, "CreateCluster", {}),
        ("eks", "GET", "/clusters/c1", {}, NO_HEADERS, "DescribeCluster", {"name": "c1"}),
        ("eks", "DELETE", "/clusters/c1", {}, NO_HEADERS, "DeleteCluster", {"name": "c1"}),
        (
            "eks",
            "GET",
            "/clusters/c1/node-groups/ng1",
            {},
            NO_HEADERS,
            "DescribeNodegroup",
            {"name": "c1", "nodegroupName": "ng1"},
        ),
        ("eks", "POST", "/clusters/c1/addons", {}, NO_HEADERS, "CreateAddon", {"name": "c1"}),
        ("s3", "GET", "/", {}, NO_HEADERS, "ListBuckets", {}),
        ("s3", "PUT", "/bkt", {}, NO_HEADERS, "CreateBucket", {"Bucket": "bkt"}),
        ("s3", "GET", "/bkt", {"list-type": "2"}, NO_HEADERS, "ListObjectsV2", {"Bucket": "bkt"}),
        ("s3", "GET", "/bkt", {}, NO_HEADERS, "ListObjects", {"Bucket": "bkt"}),
        (
            "s3",
            "PUT",
            "/bkt/a/b.txt",
            {},
            NO_HEADERS,
            "PutObject",
            {"Bucket": "bkt", "Key": "a/b.txt"},
        ),
        (
            "s3",
            "PUT",
            "/bkt/a/b.txt",
            {},
            frozenset({"x-amz-copy-source"}),
            "CopyObject",
            {"Bucket": "bkt", "Key": "a/b.txt"},
        ),
        (
            "s3",
            "POST",
            "/bkt/k",
            {"uploads": ""},
            NO_HEADERS,
            "CreateMultipartUpload",
            {"Bucket": "bkt", "Key": "k"},
        ),
        ("s3", "PUT", "/bkt", {"tagging": ""}, NO_HEADERS, "PutBucketTagging", {"Bucket": "bkt"}),
    ],
)
def test_rest_calls_are_named_from_botocore_models(
    service, method, path, query, headers, action, labels
):
    protocol, found, found_labels = ROUTES.match(service, method, path, query, headers)
    assert (found, found_labels) == (action, labels)
    assert protocol == ("rest-json" if service == "eks" else "rest-xml")


def test_unknown_rest_path_is_unknown():
    assert ROUTES.match("eks", "GET", "/no/such/thing", {}, NO_HEADERS)[1] == "Unknown"


def test_credential_scope_from_header_and_presigned_url():
    auth = (
        "AWS4-HMAC-SHA256 Credential=AKIAX/20260101/eu-west-1/eks/aws4_request, "
        "SignedHeaders=host, Signature=abc"
    )
    assert credential_scope({"HTTP_AUTHORIZATION": auth}) == ("AKIAX", "eu-west-1", "eks")
    query = "X-Amz-Credential=AKIAY%2F20260101%2Fus-west-2%2Fs3%2Faws4_request&X-Amz-Signature=x"
    assert credential_scope({"QUERY_STRING": query}) == ("AKIAY", "us-west-2", "s3")
    assert credential_scope({}) is None


def test_mutations_are_everything_but_reads():
    assert is_mutation("CreateVpc") and is_mutation("CreateTags") and is_mutation("AssumeRole")
    for read in ("DescribeVpcs", "ListClusters", "GetCallerIdentity", "SearchResources"):
        assert not is_mutation(read)


def test_created_ids_come_from_the_answer_named_ids_from_the_request():
    answer = (
        b"<natGateway><natGatewayId>nat-0123456789abcdef0</natGatewayId>"
        b"<subnetId>subnet-11111111</subnetId><vpcId>vpc-22222222</vpcId></natGateway>"
    )
    params = {"SubnetId": "subnet-11111111", "AllocationId": "eipalloc-33333333"}
    assert resource_ids("ec2", "CreateNatGateway", params, answer) == ["nat-0123456789abcdef0"]
    tags = {"ResourceId.1": "vpc-22222222", "ResourceId.2": "subnet-11111111", "Tag.1.Key": "k"}
    assert resource_ids("ec2", "CreateTags", tags, b"<return>true</return>") == [
        "vpc-22222222",
        "subnet-11111111",
    ]
    # "vpc-cidr-assoc-..." is not a VPC id.
    assert resource_ids("ec2", "DeleteVpc", {"VpcId": "vpc-cidr-assoc-1234abcd"}, b"") == []
    assert resource_ids("eks", "CreateCluster", {"name": "c1"}, b"{}") == []


@pytest.mark.parametrize(
    ("protocol", "kind", "status", "code"),
    [
        ("ec2", "throttle", 503, "RequestLimitExceeded"),
        ("query", "throttle", 400, "Throttling"),
        ("json", "throttle", 400, "ThrottlingException"),
        ("rest-json", "throttle", 400, "ThrottlingException"),
        ("rest-xml", "throttle", 503, "SlowDown"),
        ("ec2", "server_error", 500, "InternalError"),
        ("rest-json", "server_error", 500, "InternalFailure"),
    ],
)
def test_error_replies_parse_with_botocores_own_parsers(protocol, kind, status, code):
    assert defaults(kind, protocol)[:2] == (status, code)
    reply = error_reply(protocol, status, code, "boom & <bust>")
    parser = parsers.create_parser(protocol)
    parsed = parser.parse(
        {"status_code": reply.status, "headers": HeadersDict(reply.headers), "body": reply.body},
        None,
    )
    assert parsed["Error"]["Code"] == code
    assert parsed["Error"]["Message"] == "boom & <bust>"
