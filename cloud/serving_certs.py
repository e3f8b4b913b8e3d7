"""Serving certificates for an in-cluster webhook server, made once and kept in a Secret.

A controller built with controller-runtime (the AWS Load Balancer Controller among them)
starts a webhook server that reads `ca.crt`, `tls.crt` and `tls.key` from
/tmp/k8s-webhook-server/serving-certs and exits when they are missing
(kubernetes-sigs/aws-load-balancer-controller#1942). Its Helm chart makes them at install
time (a self-signed CA and a certificate for the webhook Service's DNS names, in a
`kubernetes.io/tls` Secret it keeps across upgrades); hypd does the same without Helm.

A manifest asks for one with a Secret that carries no data and the annotation
`hypd/serving-certificate-for: <service>` (a Service in the Secret's namespace):
`ensure_secret` creates that Secret with a new CA and certificate when it does not exist and
keeps it untouched when it does — a re-run never rotates it, and it is never server-side
applied (an apply without the data would strip it); one lacking a key file (not hypd's) is
refused, not overwritten. The private key goes only into the Secret's body: nothing here
logs it, `ensure_secret` returns none of it, and `ServingCertificate`'s repr leaves it out.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes.client import ApiClient

from cloud import kube
from cloud.errors import Refusal

SERVING_CERT_ANNOTATION = "hypd/serving-certificate-for"
DATA_KEYS = ("ca.crt", "tls.crt", "tls.key")
"""What controller-runtime's webhook server reads from its certificate directory."""
CLUSTER_DOMAIN = "cluster.local"
"""EKS's cluster DNS domain (not configurable there)."""
VALID_DAYS = 3650
"""Ten years, as the chart's own generated CA and certificate."""
CLOCK_SKEW = datetime.timedelta(minutes=5)
"""Valid from a little before now: a node whose clock is behind still accepts it."""


@dataclass(frozen=True)
class ServingCertificate:
    """PEM texts: the CA, the serving certificate it signed, and that certificate's key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    def secret_data(self) -> dict[str, str]:
        """The `data` of a `kubernetes.io/tls` Secret, with the CA as `ca.crt`."""
        return {name: base64.b64encode(value).decode("ascii") for name, value in
                zip(DATA_KEYS, (self.ca_pem, self.cert_pem, self.key_pem), strict=True)}


def dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server (and anything in the cluster) reaches the Service by."""
    base = f"{service}.{namespace}"
    return [base, f"{base}.svc", f"{base}.svc.{CLUSTER_DOMAIN}"]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def generate(service: str, namespace: str,
             now: datetime.datetime | None = None) -> ServingCertificate:
    """A new self-signed CA (its key is dropped: nothing else is ever signed with it) and a
    server certificate it signs for the Service's DNS names, each with its own P-256 key."""
    start = (now or datetime.datetime.now(datetime.UTC)) - CLOCK_SKEW
    end = start + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{service}-ca")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder()
          .subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=False, content_commitment=False, key_encipherment=False,
              data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
              encipher_only=False, decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names = dns_names(service, namespace)
    cert = (x509.CertificateBuilder()
            .subject_name(_name(names[1])).issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]),
                           critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                ca_ski), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return ServingCertificate(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


def service_of(manifest: Mapping[str, Any]) -> str | None:
    """The Service a manifest's Secret is to hold a serving certificate for, or None for
    any other object."""
    if manifest.get("apiVersion") != "v1" or manifest.get("kind") != "Secret":
        return None
    return ((manifest.get("metadata") or {}).get("annotations") or {}).get(
        SERVING_CERT_ANNOTATION)


def ensure_secret(api: ApiClient, manifest: Mapping[str, Any]) -> bool:
    """Create the manifest's Secret with a new serving certificate unless it exists: True
    when made now, False when one with the three files was there already (kept as it is,
    whoever made it). One without them is refused (412): the controller could not start
    with it, and it is not hypd's to replace."""
    service = service_of(manifest)
    meta = manifest.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if not service or not name or not namespace:
        raise ValueError("a serving-certificate Secret needs a name, a namespace and the "
                         f"{SERVING_CERT_ANNOTATION} annotation")
    found = kube.get_object(api, "v1", "Secret", name, namespace)
    if found is not None:
        lacking = sorted(set(DATA_KEYS) - set(found.get("data") or {}))
        if lacking:  # someone else's, unusable: not hypd's to overwrite
            raise Refusal(f"Secret {namespace}/{name} exists without {', '.join(lacking)}: "
                          "delete it and hypd makes a new serving certificate there",
                          "precondition_failed")
        return False
    secret = {**manifest, "type": "kubernetes.io/tls",
              "data": generate(service, namespace).secret_data()}
    # None: made meanwhile by another install (create is atomic); theirs is kept
    return kube.create_object(api, secret) is not None
