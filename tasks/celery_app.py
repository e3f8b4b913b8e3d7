"""The Celery app: one task, `hypd.advance`, the operation engine's heartbeat; and in every
worker's main process, the sweeper that picks up operations a dead worker left behind.

Settings that matter were measured (DESIGN.md): late acks and reject-on-worker-lost so a
killed worker's task comes back; prefetch 1 so one slow step never holds others; a
visibility timeout longer than any task or countdown so waiting monitors are not redelivered
as duplicates. A killed worker's task still returns from the broker after the visibility
timeout (a harmless duplicate by then); what recovers the operation in seconds is the
sweeper (tasks/engine/sweeper.py), measured from the step lease (`HYPD_LEASE_S`).
"""

from __future__ import annotations

import functools

import redis
from celery import Celery, bootsteps

from cloud.settings import Settings
from tasks.engine.runner import Runner
from tasks.engine.service import Engine
from tasks.engine.store import OperationStore
from tasks.engine.sweeper import Sweeper, SweeperThread
from tasks.kinds import KINDS

ADVANCE = "hypd.advance"


def make_celery(settings: Settings) -> Celery:
    app = Celery("hypd", broker=settings.redis, set_as_current=False)
    visibility = int(settings.visibility_timeout_s)
    restore_every = max(1, min(10, visibility // 2))
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # A task stopped by its time limit (or failing outside the engine's own handling,
        # e.g. Redis briefly gone) comes back instead of being acknowledged and lost: the
        # step it was in adopts what it made (duplicates are fenced by generation + lease).
        task_acks_on_failure_or_timeout=False,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": visibility,
            "unacked_restore_interval": restore_every,
            "unacked_restore_throttle": 1,
        },
        worker_hijack_root_logger=False,
        task_time_limit=max(10, visibility - 1),
    )

    @app.task(name=ADVANCE)
    def advance(op_id: str, generation: int) -> None:
        runner(settings).advance(op_id, generation)

    app.steps["worker"].add(_sweeper_step(settings))
    return app


def sweeper(settings: Settings) -> Sweeper:
    """Grace = one lease: a task that has not started (or whose lease is gone) one lease
    after it was due is stalled; sweeping every third of it bounds the pick-up after a
    worker dies by about lease + grace/3 once a live worker runs (measured in the suite)."""
    # Its own Redis client: this runs in a thread of the worker's main process, and pool
    # processes forked later must not share a connection pool with it.
    conn = redis.Redis.from_url(settings.redis, decode_responses=True, health_check_interval=30)
    return Sweeper(OperationStore(conn), enqueue_for(settings), grace_s=settings.lease_s,
                   interval_s=settings.lease_s / 3)


def _sweeper_step(settings: Settings) -> type[bootsteps.StartStopStep]:
    class SweeperStep(bootsteps.StartStopStep):
        """Runs the sweeper in the worker's main process, once its pool has forked (the
        consumer starts after: it is the last step), so it runs wherever a worker runs —
        `hypd up`, `hypd worker`, compose."""

        requires = {"celery.worker.components:Pool"}

        def __init__(self, worker, **kwargs) -> None:
            super().__init__(worker, **kwargs)
            self.thread: SweeperThread | None = None

        def start(self, worker) -> None:
            self.thread = SweeperThread(sweeper(settings))
            self.thread.start()

        def stop(self, worker) -> None:
            if self.thread is not None:
                self.thread.stop()

    return SweeperStep


@functools.cache
def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, decode_responses=True, health_check_interval=30)


@functools.cache
def celery_app(settings: Settings) -> Celery:
    return make_celery(settings)


def enqueue_for(settings: Settings):
    app = celery_app(settings)

    def enqueue(op_id: str, generation: int, countdown: float) -> None:
        app.send_task(ADVANCE, args=[op_id, generation],
                      countdown=countdown if countdown > 0 else None)

    return enqueue


def engine(settings: Settings) -> Engine:
    return Engine(OperationStore(redis_client(settings.redis)), enqueue_for(settings), KINDS)


def runner(settings: Settings) -> Runner:
    return Runner(
        OperationStore(redis_client(settings.redis)),
        enqueue_for(settings),
        KINDS,
        region=settings.region,
        poll_min_s=settings.poll_min_s,
        poll_max_s=settings.poll_max_s,
        lease_s=settings.lease_s,
    )


def worker_app() -> Celery:
    """The app `hypd worker` runs (and compose's health check pings)."""
    return celery_app(Settings.from_env())
