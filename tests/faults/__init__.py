"""The fault campaign: the proof behind "a retry never repeats a mutation".

Run as `./dev.sh test -m slow tests/faults` (CI runs it after the suite). A faulted operation
must succeed with exactly the clean run's AWS creates and Kubernetes creates, nothing made
twice, every step struck. Figures: docs/benchmarks.md.

Chains. Every operation kind of tasks/kinds.py is in a *chain* (tests/faults/chains.py) of
operations that leaves the world as it found it: a network made and deleted; a cluster made
(with FSx, a Kubernetes version behind), a stage re-run, upgraded, its nodes' software
updated, its first RayJob submitted (KubeRay installed by the operation), deleted; on one
shared cluster storage items, an instance group with a reboot, replace and delete of its
nodes, feature toggles, MLflow (made and attached; a RayJob submitted in a namespace of its
own and deleted meanwhile), a model downloaded and removed, endpoints
(routed with KEDA, a model pool reassigned and scaled in), a dev space made, resized, stopped,
started and deleted (the spaces feature turned on by its arrange). A default-suite test fails
when a kind is in no chain.

Baseline. Each chain runs clean once (after a warm-up round where its first run installs what
stays), which is its baseline: each step's calls (the operation's event stream gives each
step's window; the sandbox's AWS call log and the clusters' write log give the calls) and
what it created.

Striking. Then the chain runs once per fault, fresh names each round, striking every step of
every operation in turn at the call the clean trace says the step makes first (its first
mutation; a read a worker process makes once, the cluster client's DescribeCluster, is passed
over). The gate is a sandbox hold: while the call waits, the operation's record says whether
it is at that step. A call of an earlier step is let go and the hold armed again; one the
operation passed without making is a miss, and fails.

The faults:

- the worker's process group SIGKILLed as the step starts (the call held before AWS saw it,
  then dropped) and while it waits on AWS (AWS answered the first mutation, the answer held;
  and a step that waits, at its first poll);
- a burst of throttling then 5xx on that call past botocore's five attempts (Kubernetes: 429
  then 500), so the step itself sees it;
- redis-server SIGKILLed and started again on its append-only file (`hypd up`'s aws-mode
  Redis, fsync always) while the call is in flight, with every operation record, event
  stream and audit entry written before checked after;
- the web server SIGKILLed between recording the operation and enqueuing its first task
  (tests/faults/redisproxy.py sits between it and Redis and strikes at Celery's
  `LPUSH celery`: no product code knows), the client then sending its request again with the
  same Idempotency-Key and getting the same operation, which the sweeper starts.

Counting. AWS creates are create-like actions; puts and tags are idempotent re-assertions,
counted apart. Kubernetes creates are counted by resource and name. The summary at the end of
the run prints kinds x steps x faults struck, runs finished and extra creates. A step the
sandbox sees no call of (a cluster delete's `activate`: the panel's own record) cannot be
struck and is named; so are steps a kind declares that no chain's operation selects (node
batches past the first, a stage re-run's other stages, a create on an existing network, an
endpoint update's requirements: no request changes what an endpoint needs).

What it found:

- Celery 5.7.0's worker exits when Redis restarts under a running task (kept below 5.7:
  tests/tasks/test_broker_restart.py);
- a node action retried after throttling took an unrelated instance event for its own and
  waited for ever (see tasks/nodes.py);
- a bucket made and then tagged by a second call was, when the worker died in between,
  refused by the retry as not hypd's (buckets are now tagged by CreateBucket itself).

The campaign's stack runs a 30 s broker visibility timeout (the suite's 5 s makes a task's
time limit 10 s, which a loaded machine's KubeRay install outgrows); a killed worker is
picked up by the sweeper in the same few seconds either way.
"""
