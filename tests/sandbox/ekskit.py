"""Test helpers for EKS and the local Kubernetes: tokens made exactly as `aws eks get-token`
makes them, and kubernetes clients built from DescribeCluster."""

from __future__ import annotations

import base64
import tempfile
from typing import Any

import boto3
from botocore.config import Config
from kubernetes import client as k8s

from sandbox.local_aws import client_env

REGION = "us-west-2"


def session_kwargs(url: str) -> dict[str, Any]:
    """boto3 client arguments for the sandbox's own credentials (the ones EKS tokens need)."""
    env = client_env(url, REGION)
    return {
        "endpoint_url": url,
        "region_name": REGION,
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "aws_session_token": env["AWS_SESSION_TOKEN"],
        "config": Config(retries={"total_max_attempts": 1}),
    }


def aws_client(url: str, service: str, **overrides: Any) -> Any:
    return boto3.client(service, **{**session_kwargs(url), **overrides})


def eks_token(sts: Any, cluster_name: str, expires: int = 60) -> str:
    """`k8s-aws-v1.` + base64url (no padding) of a presigned STS GetCallerIdentity URL with
    the header `x-k8s-aws-id: <cluster>` signed in — what `aws eks get-token` prints."""

    def add_cluster_id(request: Any, **_: Any) -> None:
        request.headers["x-k8s-aws-id"] = cluster_name

    handler_id = f"hypd-test-k8s-aws-id-{cluster_name}"
    sts.meta.events.register(
        "before-sign.sts.GetCallerIdentity", add_cluster_id, unique_id=handler_id
    )
    try:
        url = sts.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=expires, HttpMethod="GET"
        )
    finally:
        sts.meta.events.unregister("before-sign.sts.GetCallerIdentity", unique_id=handler_id)
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def api_client(cluster: dict[str, Any], token: str | None, with_ca: bool = True) -> k8s.ApiClient:
    """A kubernetes client for a DescribeCluster answer (endpoint + CA data) and a token."""
    config = k8s.Configuration()
    config.host = cluster["endpoint"]
    if with_ca:
        ca = tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False)  # noqa: SIM115
        ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
        ca.close()
        config.ssl_ca_cert = ca.name
    if token is not None:
        config.api_key = {"authorization": token}
        config.api_key_prefix = {"authorization": "Bearer"}
    config.retries = 0
    return k8s.ApiClient(config)


def call(
    api: k8s.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    content_type: str | None = None,
    query: list[tuple[str, str]] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    """A raw request through the kubernetes client: (status, decoded body, headers)."""
    import json

    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    method, url, headers, body, _ = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or None,
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, body=body, _request_timeout=10)
    data = response.read() or b""
    kind = response.getheader("Content-Type") or ""
    decoded: Any = data.decode() if "json" not in kind else (json.loads(data) if data else None)
    return response.status, decoded, dict(response.getheaders())


def local_api(kube: Any, expires: int = 900) -> k8s.ApiClient:
    """A kubernetes client for one of the sandbox's local Kubernetes (a `LocalKube`), as EKS
    reaches it: its CA, and a token presigned with the sandbox's credentials (presigning
    makes no request)."""
    env = client_env("http://127.0.0.1:9", REGION)
    sts = boto3.client("sts", region_name=REGION, endpoint_url=env["AWS_ENDPOINT_URL"],
                       aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                       aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
                       aws_session_token=env["AWS_SESSION_TOKEN"])
    described = {"endpoint": kube.url,
                 "certificateAuthority": {"data": base64.b64encode(kube.ca_pem).decode()}}
    return api_client(described, eks_token(sts, kube.name, expires))
