"""cloud/serving_certs.py: the generated CA and serving certificate form a chain a TLS client
accepts for the webhook Service's names (OpenSSL's own verification, through `ssl`), and the
key stays out of reprs. Creating the Secret once: tests/cloud/test_addons.py."""

from __future__ import annotations

import datetime
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from cloud import serving_certs

SERVICE, NAMESPACE = "aws-load-balancer-webhook-service", "kube-system"


@pytest.fixture(scope="module")
def made() -> serving_certs.ServingCertificate:
    return serving_certs.generate(SERVICE, NAMESPACE)


def _handshake(made: serving_certs.ServingCertificate, hostname: str, tmp_path) -> None:
    """A TLS handshake in memory: a server with the certificate and key, a client trusting
    only the CA and checking `hostname`. Raises ssl.SSLCertVerificationError when refused."""
    (tmp_path / "tls.crt").write_bytes(made.cert_pem)
    (tmp_path / "tls.key").write_bytes(made.key_pem)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")  # key must match
    client_ctx = ssl.create_default_context(cadata=made.ca_pem.decode())
    pipes = [ssl.MemoryBIO() for _ in range(4)]
    server = server_ctx.wrap_bio(pipes[0], pipes[1], server_side=True)
    client = client_ctx.wrap_bio(pipes[2], pipes[3], server_hostname=hostname)
    for _ in range(10):
        done = 0
        for side, outgoing, incoming in ((client, pipes[3], pipes[0]),
                                         (server, pipes[1], pipes[2])):
            try:
                side.do_handshake()
                done += 1
            except ssl.SSLWantReadError:
                pass
            incoming.write(outgoing.read())
        if done == 2:
            return
    raise AssertionError("the handshake did not finish")


def test_the_serving_certificate_is_a_server_cert_signed_by_the_ca_for_the_service(made):
    ca = x509.load_pem_x509_certificate(made.ca_pem)
    cert = x509.load_pem_x509_certificate(made.cert_pem)
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == \
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])
    sans = cert.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert sans == [f"{SERVICE}.{NAMESPACE}", f"{SERVICE}.{NAMESPACE}.svc",
                    f"{SERVICE}.{NAMESPACE}.svc.cluster.local"]
    key = serialization.load_pem_private_key(made.key_pem, password=None)
    assert key.public_key() == cert.public_key()
    assert ca.public_key() != cert.public_key()  # the CA signs with a key of its own
    now = datetime.datetime.now(datetime.UTC)
    assert cert.not_valid_before_utc < now < cert.not_valid_after_utc
    assert cert.not_valid_after_utc - now > datetime.timedelta(days=3600)


def test_a_tls_client_trusting_the_ca_accepts_the_service_names_only(made, tmp_path):
    for name in serving_certs.dns_names(SERVICE, NAMESPACE):
        _handshake(made, name, tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(made, f"other.{NAMESPACE}.svc", tmp_path)
    other = serving_certs.generate(SERVICE, NAMESPACE)  # a new CA each time
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(serving_certs.ServingCertificate(other.ca_pem, made.cert_pem,
                                                    made.key_pem),
                   f"{SERVICE}.{NAMESPACE}.svc", tmp_path)


def test_the_key_is_in_the_secret_data_and_nowhere_in_reprs(made):
    data = made.secret_data()
    assert set(data) == {"ca.crt", "tls.crt", "tls.key"}
    assert b"PRIVATE KEY" in made.key_pem
    assert data["tls.key"] not in repr(made) and "PRIVATE KEY" not in repr(made)
    assert made.key_pem.decode() not in repr(made)
