"""The operation engine: persisted steps, locks, idempotency, events.

Every mutation in hypd is an operation run by this engine; nothing else mutates AWS. An
operation is a kind's steps run one boundary at a time by Celery tasks, each step an
*ensure* that adopts what an earlier attempt made; Redis holds every record, so any worker
can carry on where another stopped, and a sweeper picks up what nothing advances.

Records in Redis (prefix `hypd:`):

- `hypd:op:<id>` (string, JSON): the operation record, with `generation`, `version` and
  `next_run_at` (engine bookkeeping, not in the public view);
- `hypd:ops` (sorted set): operation ids by creation time (listing);
- `hypd:view:<id>` (string, JSON): the operation's public view as a status read answers it,
  rendered at each change;
- `hypd:events:<id>` (stream): that operation's events (ids chosen by the engine); never
  trimmed while it runs, expires 7 days after it ends;
- `hypd:events` (stream): firehose of all events, `MAXLEN ~ 10000` (the dashboard's feed;
  per-operation streams are what clients resume from);
- `hypd:locks` (hash): target path -> operation id;
- `hypd:idem:<sha256>` (string, JSON): Idempotency-Key record: body hash, operation id; 24 h
  (MCP-derived keys: 10 min);
- `hypd:lease:<id>` (string): the worker execution currently advancing the operation (TTL
  `HYPD_LEASE_S`, renewed by its heartbeat);
- `hypd:mutex:<name>` (string): a short cross-worker mutex (`ctx.lock`), TTL = the lease,
  renewed by the heartbeat;
- `hypd:due` (sorted set): unfinished operation ids by `next_run_at` (written with the
  record; what the sweeper reads);
- `hypd:kick:<id>` (string): the sweeper kicked this operation (PX = the grace: at most one
  kick per grace period);
- `hypd:sweeper` (string): whose turn it is to sweep (PX = the sweep interval: one sweep per
  interval across all workers).

Submit and advance:

- Submitting an operation is one optimistic transaction (WATCH/MULTI): check the
  Idempotency-Key record, check locks on the target, its ancestors and descendants, write the
  operation, the lock and the idempotency record. Only then is the Celery task enqueued.
- Kinds: `tasks/kinds.py` is the one table of operation kinds, handed to the engine
  (`Engine(store, enqueue, KINDS)`, `Runner(store, schedule, KINDS, ...)`). Routes submit
  kind objects; a kind not in the table is refused at submit (500 `internal_error`, a
  programming error) instead of stranding an operation no worker runs, and a test checks
  that every kind a tasks module declares is listed.
- One task, `hypd.advance(op_id, generation)`, moves an operation forward by one step
  boundary. A task whose generation is not the stored one does nothing. Each phase write is
  fenced on the generation and written with its event in the same MULTI/EXEC.
- A step is an object with `apply(ctx)` and optional `wait(ctx)`. `apply` must be an
  *ensure*: it looks each resource up (by tag, name or client token) and creates it only when
  it provably does not exist, so re-running it after a crash adopts rather than re-creates.
  The engine writes `applying` (attempt +1) before calling it and `applied` with the
  resource ids after. `wait` answers `None` when the resources are ready or a number of
  seconds to check again; the engine then re-schedules the task with that countdown (bounded
  by `HYPD_POLL_MIN_S`/`HYPD_POLL_MAX_S`), never sleeping.
- Ordering at a boundary: the next task is enqueued *before* the generation is bumped (both
  while the lease is held). A crash between the two leaves the old message unacknowledged,
  so the broker brings it back and the boundary runs again. A task that arrives with a
  generation *ahead* of the stored one (its bump not landed yet) re-schedules itself shortly
  instead of being dropped: dropping it stalled operations under load (found by the suite).
- A task stopped by Celery's time limit (the visibility timeout less a second, at least
  10 s: tasks/celery_app.py) is not acknowledged (`task_acks_on_failure_or_timeout=False`):
  it comes back and its step adopts.

Errors:

- Transient AWS errors (throttling, 5xx, timeouts) re-schedule the step with back-off (up to
  8 attempts); anything else fails the step and the operation with the real message.
- Every cloud adapter's own errors subclass one of two bases in `cloud/errors.py`: `NotYet`
  (still settling; `retry_after`) and `Refusal` (a stable `code`, the request `field` at
  fault, `retryable` for a Kubernetes API answering 429/5xx). `tasks/outcomes.py` handles the
  two bases (and DependencyViolation as a "not yet"); the REST envelope maps a `Refusal` to
  its code and the status its code implies (422, 404, 412, 502, else 409) and a `NotYet` to
  409 with Retry-After. A new adapter's errors need no change in either.

Status reads: every write of an operation (create/update) also writes its public view,
rendered as JSON, to `hypd:view:<id>` in the same transaction, so
`GET /api/v1/operations/<id>` is one Redis GET passed through unparsed (with an ETag: 304 to
an `If-None-Match` while unchanged). The view carries `last_event_id`: the operation's stream
gets ids chosen by the engine (`<ms>-<seq>`, after the newest read under the same watch of
the record, so they stay ordered even when a clock goes back), not by Redis, so the view
written with the events knows the newest one. Blocking reads (`?wait=`, WebSocket) XREAD in
slices of at most 2 s (the WebSocket asks 1 s at a time), below redis-py's 5 s socket
timeout. Figures: docs/benchmarks.md.

Cancel and retry. A queued operation is cancelled at once; a running one at its next step
boundary (remaining steps become `skipped`), after its kind's `on_cancel`, if it has one,
took back what the operation made for itself. `on_cancel` runs with the context of the step
it stopped at; a retryable failure waits for the next boundary, another is logged and the
cancel goes on (`model.download` deletes its own Job with its pods and takes back its S3
source's read). Retry: a failed or cancelled operation goes back to `queued` with the same
id, the failed step back to `pending` (its resources kept), the lock taken again (409 if
another operation holds it now). The steps a cancel skipped go back to `pending` and run; a
step a cancel found waiting (`applied`) keeps its phase and waits again.

Leases and mutexes:

- A task takes `hypd:lease:<id>` (SET NX PX, TTL `HYPD_LEASE_S`) before advancing; a
  duplicate that finds it held re-schedules itself rather than running alongside.
- A heartbeat thread (tasks/engine/heartbeat.py) renews the lease and any mutex the step
  holds every third of the TTL while the step runs, so a step slower than one TTL
  (throttling back-off) is never joined by a duplicate; a late beat that finds its lease
  lapsed and free takes it back (the step still runs). When the worker dies, renewal stops
  and the lease runs out within one TTL. (Found by the suite: a throttled subnet step
  outlived its mutex and a redelivered duplicate made a fifth subnet.) The lease used to
  last the visibility timeout (300 s), which is what made a killed worker's operation wait
  five minutes; the heartbeat is what lets it be short.
- Short cross-worker mutexes (`ctx.lock(name)`, Redis locks `hypd:mutex:<name>`) guard
  read-then-create sections such as choosing a subnet block in a VPC. Their expiry is the
  lease's, renewed with it, so a beat has two thirds of a TTL to spare (half the lease left
  it one sixth once the lease became short); a killed holder never stalls others for long,
  and a step that cannot get one is retried, not failed.

Due times and the sweeper:

- Whenever the engine enqueues an operation's next task it records when that task is due,
  `next_run_at` (epoch seconds): at submit and retry "now" (written before the enqueue), at a
  boundary now + the countdown (in the generation bump). `hypd:due` indexes unfinished
  operations by it in the same transaction as the record; a finished one leaves it.
- The sweeper (tasks/engine/sweeper.py) picks up operations nothing advances: a dead
  worker's (the task it ran, or a countdown task it held in memory, would come back from the
  broker only after the visibility timeout) and one whose web process died between recording
  it and enqueuing its first task (nothing would ever come).
- An operation is *stalled* when it is unfinished, its next task was due more than a grace
  ago (grace = the lease), and nobody holds its lease. Waiting on a countdown is therefore
  not stalled (not due yet); a running step is not (its heartbeat holds the lease however
  long it takes); a task queued behind busy workers gets the grace to start, and if kicked
  anyway is one more duplicate.
- Kicking is enqueueing `advance(op_id, stored generation)`, so the engine's generation fence
  and lease decide what runs: a kick never runs a step twice
  (tests/tasks/engine/test_sweeper.py). At most one kick per operation per grace
  (`hypd:kick:<id>`, SET NX).
- It runs as a thread in every Celery worker's main process (a worker bootstep, started
  after the pool forks, with its own Redis client), so it works wherever workers run
  (`hypd up`, `hypd worker`, compose, several machines); `hypd:sweeper` (SET NX, PX = the
  interval, a third of the lease) lets one of them sweep per interval. A worker starting up
  also indexes unfinished records from before due times existed.
- Clocks: a skewed clock makes a kick early (a harmless duplicate) or late, never wrong.
- Measured in the suite (lease 2 s, worker SIGKILLed at a fault point, new worker with a
  300 s visibility timeout): succeeded 3.5-4 s after the new worker's process was started; a
  recorded-but-never-enqueued create succeeded 4-5 s after it was recorded. With the
  production lease (15 s) the bound is about lease + a third of it after the kill once a
  worker runs, well within 30 s.
"""
