"""How another process reaches the local AWS: its address and the environment for boto3.

Standard library only, so that `hypd up`, which starts the local AWS as a child and hands its
URL to the other children, does not load moto itself.
"""

from __future__ import annotations

HOST = "127.0.0.1"  # loopback only: the local AWS accepts any credentials
DEFAULT_REGION = "us-west-2"
# Variables that would send boto3 to a real profile; unset them in a sandboxed child.
UNSET_ENV: tuple[str, ...] = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")
CONTROL_PATH = "/_sandbox"
"""The control routes' prefix; `GET <url>/_sandbox` answers once the local AWS serves."""


def client_env(url: str, region: str = DEFAULT_REGION) -> dict[str, str]:
    """Environment that points boto3 in another process at the local AWS.

    Fake credentials (moto accepts any) and no config files, so nothing from the developer's
    real AWS setup can leak in; also unset `UNSET_ENV` in the child.
    """
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "AKIAHYPDSANDBOX00000",
        "AWS_SECRET_ACCESS_KEY": "hypd-sandbox-secret-not-a-real-key",
        "AWS_SESSION_TOKEN": "hypd-sandbox-session",
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
