"""Each local Kubernetes has its own certificate authority, as each EKS cluster does: a
client must trust exactly that cluster's CA (from DescribeCluster) to connect."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import trustme

HOST = "127.0.0.1"


@dataclass(frozen=True)
class ClusterTls:
    ca_pem: bytes
    context: ssl.SSLContext


def make() -> ClusterTls:
    ca = trustme.CA(organization_name="hypd sandbox")
    cert = ca.issue_cert(HOST, "localhost")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    return ClusterTls(ca.cert_pem.bytes(), context)
