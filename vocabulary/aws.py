"""Where hypd acts: its local sandbox, or a real AWS account (`HYPD_AWS`)."""

from __future__ import annotations

SANDBOX = "sandbox"
AWS = "aws"
AWS_MODES = (SANDBOX, AWS)
