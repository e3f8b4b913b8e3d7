"""What the HyperPod inference operator does in AWS for an InferenceEndpointConfig that names
a SageMaker endpoint (`spec.endpointName`), played on this process's moto.

With its pods serving, the operator registers the endpoint with SageMaker — a model, an
endpoint configuration and an endpoint, each tagged `CreatedBy: HyperPodInference` (the tag
AWS's managed policy for the operator's role requires on everything it creates), whose
execution role is the add-on's `executionRoleArn` — and keeps the endpoint's TLS certificate
in the add-on's `tlsCertificateS3Bucket` (an object tagged the same way). When the config is
deleted it deletes them again, while its finalizer holds the config.

SageMaker refuses what AWS refuses: an execution role that does not exist or does not trust
`sagemaker.amazonaws.com` ("Could not assume role ..."), an endpoint name another endpoint
holds; the certificate cannot be written without its bucket. Each is a `Refused` with the
message the operator reports.

The operator's settings (account, region, execution role, bucket) are the add-on's
configuration, read through `settings` (sandbox/layer.py gives it from the EKS records).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CREATED_BY = {"Key": "CreatedBy", "Value": "HyperPodInference"}
SAGEMAKER = "sagemaker.amazonaws.com"
VARIANT = "AllTraffic"
COMPLETED = "CreationCompleted"
CERTIFICATE = b"-----BEGIN CERTIFICATE-----\nsandbox\n-----END CERTIFICATE-----\n"


class Refused(Exception):
    """AWS refused a step of the registration (the message is what the operator reports)."""


@dataclass(frozen=True)
class OperatorSettings:
    account: str
    region: str
    execution_role: str | None
    tls_bucket: str | None


def _trusts_sagemaker(document: Any) -> bool:
    doc = json.loads(document) if isinstance(document, str) else document or {}
    for statement in doc.get("Statement") or []:
        services = (statement.get("Principal") or {}).get("Service") or []
        services = [services] if isinstance(services, str) else services
        actions = statement.get("Action") or []
        actions = [actions] if isinstance(actions, str) else actions
        if statement.get("Effect") == "Allow" and SAGEMAKER in services and \
                "sts:AssumeRole" in actions and not statement.get("Condition"):
            return True
    return False


class ManagedAws:
    """The SageMaker and S3 side of one cluster's inference operator."""

    def __init__(self, settings: Callable[[], OperatorSettings | None]) -> None:
        self._settings = settings

    # --- moto --------------------------------------------------------------------------

    @staticmethod
    def _sagemaker(s: OperatorSettings) -> Any:
        from moto.sagemaker.models import sagemaker_backends

        return sagemaker_backends[s.account][s.region]

    @staticmethod
    def _role(s: OperatorSettings, arn: str) -> Any | None:
        from moto.iam.models import iam_backends

        for role in list(iam_backends[s.account]["aws"].roles.values()):
            if role.arn == arn:
                return role
        return None

    @staticmethod
    def _s3(s: OperatorSettings) -> Any:
        from moto.s3.models import s3_backends

        return s3_backends[s.account]["aws"]

    @staticmethod
    def _created_by_operator(resource: Any) -> bool:
        return CREATED_BY in (getattr(resource, "tags", None) or [])

    # --- the operator's calls ----------------------------------------------------------

    def register(self, namespace: str, name: str, endpoint: str, instance_type: str,
                 image: str) -> dict[str, Any]:
        """The endpoint registered and its certificate written: the status the operator
        shows ({"endpoints": {...}, "tlsCertificate": {...}}). Adopts what it made before."""
        s = self._settings()
        if s is None or not s.execution_role or not s.tls_bucket:
            raise Refused("the inference add-on's configuration names no execution role or "
                          "TLS certificate bucket")
        role = self._role(s, s.execution_role)
        if role is None or not _trusts_sagemaker(role.assume_role_policy_document):
            raise Refused(f"Could not assume role {s.execution_role}. Please ensure that the "
                          f"role exists and allows principal '{SAGEMAKER}' to assume the role.")
        key = f"{namespace}/{name}/certificate.pem"
        s3 = self._s3(s)
        if s.tls_bucket not in s3.buckets:
            raise Refused(f"TLS certificate bucket {s.tls_bucket} does not exist")
        if key not in s3.buckets[s.tls_bucket].keys:
            written = s3.put_object(s.tls_bucket, key, CERTIFICATE)
            s3.put_object_tagging(written, {CREATED_BY["Key"]: CREATED_BY["Value"]})
        sm = self._sagemaker(s)
        found = sm.endpoints.get(endpoint)
        if found is not None and not self._created_by_operator(found):
            raise Refused(f"Cannot create already existing endpoint \"{found.arn}\".")
        if endpoint not in sm._models:
            sm.create_model(endpoint, s.execution_role, {"Image": image}, None, None,
                            [CREATED_BY])
        if endpoint not in sm.endpoint_configs:
            sm.create_endpoint_config(endpoint, [{
                "VariantName": VARIANT, "ModelName": endpoint,
                "InstanceType": instance_type, "InitialInstanceCount": 1}],
                {}, {}, [CREATED_BY], "")
        if found is None:
            found = sm.create_endpoint(endpoint, endpoint, [CREATED_BY])
        return {
            "endpoints": {"sagemaker": {
                "state": COMPLETED, "endpointArn": found.arn,
                "configArn": sm.endpoint_configs[endpoint].endpoint_config_arn,
                "modelArn": sm._models[endpoint].arn}},
            "tlsCertificate": {"tlsCertificateOutputS3Bucket": s.tls_bucket,
                               "tlsCertificateS3Keys": [key]},
        }

    def deregister(self, namespace: str, name: str, endpoint: str | None) -> None:
        """What `register` made, deleted (only what carries the operator's tag)."""
        s = self._settings()
        if s is None:
            return
        if endpoint:
            sm = self._sagemaker(s)
            found = sm.endpoints.get(endpoint)
            if found is not None and self._created_by_operator(found):
                sm.delete_endpoint(endpoint)
                if endpoint in sm.endpoint_configs:
                    sm.delete_endpoint_config(endpoint)
                if endpoint in sm._models:
                    sm.delete_model(endpoint)
        if s.tls_bucket:
            s3 = self._s3(s)
            key = f"{namespace}/{name}/certificate.pem"
            if s.tls_bucket in s3.buckets and key in s3.buckets[s.tls_bucket].keys:
                s3.delete_object(s.tls_bucket, key)
