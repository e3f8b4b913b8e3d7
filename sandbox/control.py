"""Python client for the `/_sandbox` control routes, for tests and demo scripts.

Plain urllib, so a test process needs nothing but the sandbox's URL (the same
`AWS_ENDPOINT_URL` the workers use) to inject faults, place fault points and read the call log.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from sandbox.env import CONTROL_PATH


class SandboxControlError(RuntimeError):
    """The control route refused the request (carries its status and error body)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"sandbox control answered {status}: {body}")
        self.status = status
        self.body = body


class SandboxControl:
    """Drive one local AWS's faults, holds, call log and counters."""

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.base_url}{CONTROL_PATH}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"} if data is not None else {},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return json.loads(reply.read() or b"null")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                detail: Any = json.loads(raw)
            except ValueError:
                detail = raw.decode("utf-8", "replace")
            raise SandboxControlError(exc.code, detail) from None

    # faults
    def add_fault(
        self,
        service: str | None,
        action: str | None,
        kind: str,
        count: int = 1,
        code: str | None = None,
        message: str | None = None,
        status: int | None = None,
        seconds: float | None = None,
    ) -> dict[str, Any]:
        """Make the next `count` calls to service:action fail with `kind`
        ("throttle" | "server_error" | "timeout" | "error"). None matches any."""
        spec: dict[str, Any] = {"service": service, "action": action, "kind": kind, "count": count}
        extras = {"code": code, "message": message, "status": status, "seconds": seconds}
        spec.update({k: v for k, v in extras.items() if v is not None})
        return self._request("POST", "/faults", spec)

    def faults(self) -> list[dict[str, Any]]:
        """Faults still armed."""
        return self._request("GET", "/faults")["faults"]

    def clear_faults(self) -> None:
        """Disarm all faults (and let stalled timeouts go)."""
        self._request("DELETE", "/faults")

    # holds
    def hold(self, service: str, action: str, count: int = 1, when: str = "after") -> str:
        """Hold the answers of the next `count` calls to service:action (`when="before"`: the
        calls themselves, before AWS or a fault sees them); returns the hold id."""
        return self._request(
            "POST", "/holds",
            {"service": service, "action": action, "count": count, "when": when},
        )["id"]

    def get_hold(self, hold_id: str) -> dict[str, Any]:
        """One hold: `state` is "armed" | "held" | "released"; `calls` the call log seqs."""
        return self._request("GET", f"/holds/{urllib.parse.quote(hold_id)}")

    def holds(self) -> list[dict[str, Any]]:
        """All holds."""
        return self._request("GET", "/holds")["holds"]

    def wait_held(self, hold_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """Wait until a call is parked on the hold (AWS has answered it); returns the hold."""
        deadline = time.monotonic() + timeout
        while True:
            hold = self.get_hold(hold_id)
            if hold["state"] == "held":
                return hold
            if time.monotonic() >= deadline:
                raise TimeoutError(f"hold {hold_id} not held after {timeout} s: {hold}")
            time.sleep(0.02)

    def release(self, hold_id: str, drop: bool = False) -> dict[str, Any]:
        """Let the held answers of one hold go to their clients; `drop`: calls held `before`
        are answered with an error instead, never reaching AWS."""
        return self._request("POST", f"/holds/{urllib.parse.quote(hold_id)}/release",
                             {"drop": True} if drop else None)

    def clear_holds(self) -> None:
        """Release everything held and forget all holds."""
        self._request("DELETE", "/holds")

    # call log
    def calls(
        self, service: str | None = None, action: str | None = None, since: int = 0
    ) -> list[dict[str, Any]]:
        """Logged calls after `since`, optionally filtered."""
        query = {"service": service, "action": action, "since": since or None}
        encoded = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        return self._request("GET", f"/calls?{encoded}" if encoded else "/calls")["calls"]

    def counters(self) -> dict[str, Any]:
        """{"by_action": {"ec2:CreateVpc": n}, "by_resource": {id: {"ec2:CreateTags": n}}}."""
        return self._request("GET", "/counters")

    def kube_writes(self, cluster: str | None = None, since: int = 0) -> list[dict[str, Any]]:
        """Writes to the local clusters' APIs after `since`: {"seq", "cluster", "verb",
        "resource", "namespace", "name", "status", "created", "fault", "at"}."""
        query = {"cluster": cluster, "since": since or None}
        encoded = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        return self._request("GET", "/kube/writes" + (f"?{encoded}" if encoded else ""))[
            "writes"]

    def kube_creates(self) -> list[dict[str, Any]]:
        """Objects clients created in the local clusters: [{"cluster", "resource",
        "namespace", "name", "count"}] (`count` > 1: made again after it was deleted)."""
        return self._request("GET", "/kube/counters")["creates"]

    def reset(self, aws: bool = False) -> None:
        """Clear faults, holds, the call log and counters (the clusters' write log and
        create counters too); with `aws`, AWS state too: moto's
        and every gap's (HyperPod, FSx, EKS add-ons and access, quotas, training plans, local
        Kubernetes clusters, pending timed changes) — what `POST /moto-api/reset` does."""
        self._request("POST", "/reset", {"aws": True} if aws else None)

    def advance_clock(self, seconds: float) -> dict[str, Any]:
        """Jump simulated time forward and apply the state changes now due."""
        return self._request("POST", "/clock/advance", {"seconds": seconds})

    def info(self) -> dict[str, Any]:
        """Speed, simulated clock and pending state changes."""
        return self._request("GET", "")

    # service quotas
    def set_quota(
        self,
        value: float,
        quota_name: str | None = None,
        quota_code: str | None = None,
        service_code: str = "sagemaker",
        region: str | None = None,
    ) -> dict[str, Any]:
        """Set a quota's applied value (name or code; no region: every region), e.g.
        `set_quota(2, "ml.p5.48xlarge for cluster usage")` for a shortfall."""
        body: dict[str, Any] = {"service_code": service_code, "value": value}
        extras = {"quota_name": quota_name, "quota_code": quota_code, "region": region}
        body.update({k: v for k, v in extras.items() if v is not None})
        return self._request("PUT", "/quotas", body)

    def quotas(
        self, service_code: str | None = None, region: str | None = None, overridden: bool = False
    ) -> list[dict[str, Any]]:
        """Modelled quotas with their applied values (`overridden`: only those set here)."""
        query = {"service_code": service_code, "region": region,
                 "overridden": "1" if overridden else None}
        encoded = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        return self._request("GET", f"/quotas?{encoded}" if encoded else "/quotas")["quotas"]

    def reset_quotas(self) -> None:
        """Every quota back to its default value."""
        self._request("DELETE", "/quotas")

    # training plans
    def add_training_plan(
        self,
        name: str,
        instance_type: str,
        count: int,
        availability_zone: str,
        status: str = "Active",
        start: str | float | None = None,
        end: str | float | None = None,
        duration_hours: float | None = None,
        region: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Declare a training plan the account holds (status Active | Scheduled | Expired |
        Pending | Failed; times ISO 8601 or epoch); answers it as DescribeTrainingPlan does."""
        body: dict[str, Any] = {
            "name": name,
            "instance_type": instance_type,
            "count": count,
            "availability_zone": availability_zone,
            "status": status,
        }
        extras = {"start": start, "end": end, "duration_hours": duration_hours,
                  "region": region, **extra}
        body.update({k: v for k, v in extras.items() if v is not None})
        return self._request("POST", "/training-plans", body)

    def training_plans(self) -> dict[str, Any]:
        """{"training_plans": [...]} declared so far."""
        return self._request("GET", "/training-plans")

    def clear_training_plans(self) -> None:
        """Forget every declared training plan."""
        self._request("DELETE", "/training-plans")

    # training jobs (the simulated operators' containers)
    def set_training(self, steps: int | None = None, lines_per_second: float | None = None,
                     job: str | None = None) -> dict[str, Any]:
        """How a training container runs (every job's, or one `job`'s): `steps` progress
        lines at `lines_per_second` (simulated seconds)."""
        body = {k: v for k, v in (("steps", steps), ("lines_per_second", lines_per_second),
                                  ("job", job)) if v is not None}
        return self._request("PUT", "/training", body)["settings"]

    def fail_training_pod(self, job: str, pod: str | None = None, exit_code: int = 1,
                          after_lines: int = 2, count: int = 1,
                          last_words: list[str] | None = None) -> dict[str, Any]:
        """Make the next `count` runs of the job's training containers (or one pod's) exit
        with `exit_code` after `after_lines` lines, printing `last_words` last."""
        body: dict[str, Any] = {"job": job, "exit_code": exit_code,
                                "after_lines": after_lines, "count": count,
                                "last_words": list(last_words or ())}
        if pod is not None:
            body["pod"] = pod
        return self._request("POST", "/training/faults", body)

    def clear_training_faults(self) -> None:
        self._request("DELETE", "/training/faults")
