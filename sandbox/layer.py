"""The WSGI layer in front of moto: faults, holds, timed states and the call log.

One request path, in order: control routes are answered here; an AWS call is named, held on
arrival if a `before` hold matches, due state changes are applied, an armed fault answers
instead of AWS, otherwise moto answers; the timing rules may turn that answer into an
in-between state; the call is logged and counted; an armed hold keeps the answer back.
Logging happens before the hold, so the log and counters show what AWS did even if the
client never hears about it.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.wsgi import get_input_stream

from sandbox import control_api, gaps
from sandbox.calllog import CallLog
from sandbox.errors import defaults, error_reply
from sandbox.faults import Fault, FaultBook
from sandbox.holds import HoldBook, HoldWhen
from sandbox.identify import Call, RestRoutes, identify
from sandbox.kube import KubeRegistry
from sandbox.kube.writes import KubeWrites
from sandbox.reply import Reply
from sandbox.resources import resource_ids
from sandbox.simulator.cluster import ClusterSimulator
from sandbox.simulator.downloads import DownloadProgram, MotoObjects
from sandbox.simulator.managed_aws import ManagedAws, OperatorSettings
from sandbox.simulator.training import TrainingBook
from sandbox.timing import Clock, Transitions

# moto's own admin routes (reset, state manager, dashboard) pass straight through.
_MOTO_ADMIN_PREFIXES = ("/moto-api", "/favicon.ico")
# ... except moto's reset, which must take the gaps' state with it (`reset_aws`).
_MOTO_RESET = "/moto-api/reset"
INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"


class LocalAwsApp:
    """WSGI application: moto plus the sandbox's controls."""

    def __init__(self, speed: float = 1.0) -> None:
        self.clock = Clock(speed)
        self.transitions = Transitions(self.clock)
        self.faults = FaultBook()
        self.holds = HoldBook()
        self.log = CallLog()
        self._routes = RestRoutes()
        self._moto = DomainDispatcherApplication(create_backend_app)
        self.gap_state: dict[str, Any] = {}  # each gap's declared state (sandbox.gaps.GapState)
        # one local Kubernetes per EKS cluster (started on demand), its controllers simulated
        # training settings and pod faults, shared by every cluster's training operators
        self.training = TrainingBook()
        self.kube_writes = KubeWrites()
        self.kubes = KubeRegistry(attach=self._simulator, holds=self.holds, faults=self.faults,
                                  writes=self.kube_writes)
        gaps.load()
        # a jump of the clock ages what the gaps (and moto under them) report (sandbox/timing.py)
        self.clock.on_advance(functools.partial(gaps.age, self))
        self._controls = control_api.Controls(
            self.faults, self.holds, self.log, self.clock, self.transitions, app=self
        )

    def _simulator(self, kube: Any) -> ClusterSimulator:
        """A cluster's controllers; its containers that upload (and write under a bucket
        mount) reach this local AWS's S3; its workspaces idle by this sandbox's clock."""
        simulator = ClusterSimulator(kube, self._speed, training=self.training)

        def has_secret_key(namespace: str, name: str, key: str) -> bool:
            secret = kube.get_object("v1", "Secret", name, namespace) or {}
            return key in (secret.get("data") or {})

        simulator.objects = MotoObjects()
        simulator.programs.register(DownloadProgram(simulator.objects, has_secret_key))
        simulator.inference.aws = ManagedAws(lambda: self._inference_settings(kube.name))
        simulator.workspaces.clock = self.clock  # idle time is the sandbox clock's
        simulator.workspaces.timeline = self.transitions.timeline
        return simulator

    def _inference_settings(self, cluster: str) -> OperatorSettings | None:
        """The inference add-on's configuration in the cluster of that name, if installed."""
        from sandbox.gaps.eks_addon_calls import parsed_configuration
        from sandbox.gaps.eks_state import state

        # read without the EKS records' lock: this runs on the cluster's event loop, which
        # an EKS call holding that lock may be waiting on (an add-on's objects going in)
        for rec in list(state(self).clusters.values()):
            addon = rec.addons.get(INFERENCE_ADDON)
            if rec.name != cluster or addon is None:
                continue
            config = parsed_configuration(addon.get("configurationValues"))
            bucket = config.get("tlsCertificateS3Bucket")
            return OperatorSettings(
                account=rec.account, region=rec.region,
                execution_role=config.get("executionRoleArn"),
                tls_bucket=str(bucket).removeprefix("s3://") if bucket else None)
        return None

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        path: str = environ.get("PATH_INFO", "")
        if path == control_api.PREFIX or path.startswith(control_api.PREFIX + "/"):
            return control_api.handle(self._controls, environ).send(start_response)
        body = get_input_stream(environ).read()
        if path == _MOTO_RESET and environ.get("REQUEST_METHOD") == "POST":
            self.reset_aws()
            return Reply.json({"status": "ok"}).send(start_response)
        if path.startswith(_MOTO_ADMIN_PREFIXES):
            return self.forward_to_moto(environ, body, "json").send(start_response)
        return self._aws_call(environ, body).send(start_response)

    def reset_aws(self) -> None:
        """Wipe AWS state: moto's (process-wide, as moto's own reset does) and every gap's."""
        from moto.moto_api._internal.models import moto_api_backend

        moto_api_backend.reset()
        gaps.reset(self)

    def _speed(self) -> float:
        return self.clock.speed

    def close(self) -> None:
        """Let every held or stalled request go (the server is stopping)."""
        self.holds.close()
        self.faults.clear()
        self.kubes.close()

    def _aws_call(self, environ: dict[str, Any], body: bytes) -> Reply:
        call = identify(environ, body, self._routes)
        gate = self.holds.take(call.service, call.action, HoldWhen.BEFORE)
        if gate is not None and self.holds.park(gate, 0):  # parked on arrival, then dropped
            reply = error_reply(call.protocol, 503, "ServiceUnavailable",
                                "dropped at a fault point before AWS saw it")
            self.log.record(call, reply.status, [], fault="dropped")
            return reply
        self.transitions.tick()
        fault = self.faults.take(call.service, call.action)
        if fault is not None:
            reply = self._fail(call, fault)
            self.log.record(call, reply.status, [], fault=fault.kind)
            return reply
        hold = self.holds.take(call.service, call.action)
        answer = gaps.answer_for(call.key)
        if answer is not None:
            reply = answer.run(gaps.GapContext(call, environ, body, self))
        else:
            reply = self.forward_to_moto(environ, body, call.protocol)
        reply = self.transitions.after_call(call, reply)
        ids = resource_ids(call.service, call.action, call.params, reply.body)
        seq = self.log.record(call, reply.status, ids)
        if hold is not None:
            self.holds.park(hold, seq)
        return reply

    def _fail(self, call: Call, fault: Fault) -> Reply:
        if fault.kind == "timeout":
            self.faults.stall(fault.seconds)
        status, code, message = defaults(fault.kind, call.protocol)
        return error_reply(
            call.protocol, fault.status or status, fault.code or code, fault.message or message
        )

    def forward_to_moto(self, environ: dict[str, Any], body: bytes, protocol: str) -> Reply:
        """Let moto answer, reading its whole answer into memory (gaps: `GapContext.moto`)."""
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        captured: dict[str, Any] = {}
        chunks: list[bytes] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured["status"] = int(status.split(" ", 1)[0])
            captured["headers"] = list(headers)
            return chunks.append

        try:
            result = self._moto(environ, start)
            try:
                chunks.extend(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except Exception as exc:  # moto raises for actions it has not implemented
            message = f"local AWS (moto) failed: {type(exc).__name__}: {exc}"
            return error_reply(protocol, 500, "InternalFailure", message)
        return Reply(captured.get("status", 500), b"".join(chunks), captured.get("headers", []))
