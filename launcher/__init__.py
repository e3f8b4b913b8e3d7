"""The launcher: the `hypd` command, which starts hypd's processes.

`hypd up` runs the whole stack (Redis, the local AWS in sandbox mode, Celery workers, the web
server) as supervised children; `hypd web`, `hypd worker`, `hypd mcp` and `hypd sandbox` run
one part each. It is the composition root: it may import every part of hypd (lazily, so that
`hypd mcp` pays for the MCP server only), and no part imports it.

`hypd web` starts gunicorn with `--config python:launcher.gunicorn_conf` (hooks only: the log
config in json mode, `child_exit` for the metrics) after setting its metrics directory.
`hypd worker` takes `--hostname` (Celery's node name, default `hypd@<host>`; several workers
on one Redis need distinct ones) and `--metrics-port`.

`hypd up` (launcher/cli.py, with launcher/supervisor.py):

- starts `redis-server` (unless `HYPD_REDIS_URL`);
- the local AWS (sandbox mode: `hypd sandbox --aws-port <port>`, a child like the others, on
  a port chosen once); `up` waits until `<url>/_sandbox` answers, then hands
  `sandbox.env.client_env(<url>)` to the other children's environment;
- `hypd worker` (Celery prefork) and `hypd web` (gunicorn gthread, one process per core up
  to 8, 64 threads each: each WebSocket or long-poll holds a thread; of them at most
  `HYPD_WEB_GATE`, 8, run request code at once, the rest wait in line while waiting sockets
  and long-polls step out, app/gate.py; the processes are stateless, and one process would
  leave every other core idle);
- waits for `/healthz`, prints where the logs are, how to sign in (the generated operator
  token, once; it lives in `HYPD_DATA_DIR/operator-token`, 0600) and `hypd ready: <url>`
  (stdout, the one line tests and docs rely on; everything else of its own goes to stderr as
  `hypd: ...`);
- restarts a child that exits, and on SIGINT/SIGTERM stops them all (SIGTERM to each child's
  process group, SIGKILL after 10 s; the web server and the worker first, the local AWS and
  Redis last).

A restarted local AWS is empty. moto and the sandbox's own records (gaps, local Kubernetes,
clock, faults) live in the sandbox process's memory only, so when that child dies `up`
restarts it on the same URL (the workers and the web server keep working against it) and
says so on the terminal: `hypd: sandbox exited (...); restarting it ...` and `hypd: the local
AWS starts again empty ...`. Every VPC, cluster, node and local Kubernetes made so far is
gone while the panel's records in Redis still name them; the user deletes or re-creates
them. Acceptable for a sandbox: nothing real is lost (tests/launcher/test_cli.py kills the
child and makes a network after the restart). With `HYPD_AWS=aws` there is no such child.

Each child runs under launcher/childwatch.py (a standard-library wrapper run by path, so it
loads nothing of ours) in a session of its own, so a Ctrl-C at the terminal reaches only the
supervisor, which then stops the children in order. The wrapper:

- holds the read end of a pipe whose only write end the supervisor keeps (pipe ends are not
  inherited; `pass_fds` hands the read end alone to each wrapper). When the supervisor dies
  in any way, SIGKILL included, the read returns EOF and the wrapper stops its whole process
  group (SIGTERM, SIGKILL after 5 s: the child and its own children). Measured: all eight
  descendants gone 1 s after `hypd up` was SIGKILLed. Not PR_SET_PDEATHSIG: it needs a
  `preexec_fn`, unsafe in a process with threads, and would not cover redis-server without
  a wrapper anyway;
- writes each line the child prints to `HYPD_DATA_DIR/logs/<source>.log` as
  `<time> <source> | <line>` (sources `redis`, `sandbox`, `worker`, `web`; the local AWS logs
  at INFO, and prints its `export` lines, into `sandbox.log`), and with `--verbose` to the
  terminal as `<source> | <line>`. Each start keeps the previous run's logs as `*.log.1`.

So the terminal shows what a person needs; Redis's and Celery's banners, Celery's root-user
SecurityWarning and per-task lines are in the logs. A child that fails to start is reported
with the last lines of its log.
"""
