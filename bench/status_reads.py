"""Status reads against their floor, measured side by side in one run.

`GET /api/v1/operations/<id>` is what every dashboard tab, agent and script polls. This
starts a local stack with `hypd web`'s default server settings, and beside it the floor
(bench/floor.py: a bare Flask route that checks a bearer token and reads one Redis hash,
under gunicorn with 2 workers x 8 threads), loads both with wrk at 1, 8 and 64 connections
(alternating, so machine noise hits both), and prints throughput, p50 and p99 with the
ratios, and each server's CPU time and voluntary context switches per request (its
processes' threads, from /proc: what a busy neighbour moves least). Then the same read
through the MCP server over stdio with the official client, against the REST read made
sequentially by one keep-alive HTTP client.

Needs wrk (Debian: apt-get install wrk). Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from tests.stack import REPO, Stack, free_port, wait_until

FLOOR_TOKEN = "floor-token-0123456789"


# -- wrk ---------------------------------------------------------------------------------------

def _ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def _tree(pid: int) -> list[int]:
    """A server's pid and its children's (gunicorn's workers)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid, *(int(c) for c in children)]


def _spent(pids: list[int]) -> tuple[float, int]:
    """CPU seconds (user + system) and voluntary context switches of these processes' threads
    so far: per request, the figures the neighbours' load moves least."""
    ticks, switches = 0, 0
    for pid in pids:
        ticks += sum(int(v) for v in Path(f"/proc/{pid}/stat").read_text()
                     .rsplit(")", 1)[1].split()[11:13])
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                status = (task / "status").read_text()
            except OSError:  # the thread ended
                continue
            switches += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.M)[1])
    return ticks / os.sysconf("SC_CLK_TCK"), switches


def wrk(url: str, token: str, connections: int, seconds: int,
        server: int | None = None) -> dict[str, float]:
    """wrk's figures; with `server` (a pid), also its CPU µs and voluntary context switches
    per request while wrk ran."""
    pids = _tree(server) if server else []
    before = _spent(pids)
    threads = max(1, min(connections, 2))
    out = subprocess.run(
        ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency",
         "-H", f"Authorization: Bearer {token}", url],
        check=True, capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _ms(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = _ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    cpu, switches = (after - first for after, first in zip(_spent(pids), before, strict=True))
    requests = int(re.search(r"(\d+) requests in", out).group(1)) or 1
    return {"rps": rps, "p50": p50, "p99": p99, "non2xx": int(errors.group(1)) if errors else 0,
            "cpu_us": cpu * 1e6 / requests, "vcsw": switches / requests}


# -- the floor ---------------------------------------------------------------------------------

def start_floor(redis_url: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "FLOOR_REDIS_URL": redis_url, "FLOOR_TOKEN": FLOOR_TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "2",
         "--threads", "8", "--worker-class", "gthread", "--no-control-socket",
         "--access-logfile", "/dev/null", "--error-logfile", "/dev/null", "bench.floor:app"],
        cwd=REPO, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(base + "/floor/none", headers={
                "Authorization": f"Bearer {FLOOR_TOKEN}"}, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(up, 30, what="the floor server")
    return proc, base


# -- MCP ---------------------------------------------------------------------------------------

def _p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def mcp_against_rest(stack: Stack, op_id: str, calls: int,
                           reply_file: Path) -> dict[str, float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "launcher.cli", "mcp"], cwd=str(REPO),
        env={"HYPD_API_URL": stack.url, "HYPD_TOKEN": stack.operator_token,
             "PATH": os.environ.get("PATH", "")})
    schema_file = reply_file.with_name("get_operation-output-schema.json")
    floor_params = StdioServerParameters(
        command=sys.executable,
        args=[str(REPO / "bench" / "mcp_floor.py"), str(reply_file), str(schema_file)],
        cwd=str(REPO), env={"PATH": os.environ.get("PATH", "")})
    with httpx.Client(base_url=stack.url, timeout=30,
                      headers={"Authorization": f"Bearer {stack.operator_token}"}) as http:
        async with Client(params, read_timeout_seconds=60, mode="legacy") as client:
            # the floor's tool declares get_operation's published output schema, so the
            # client validates the same structured content against the same schema
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            schema_file.write_text(json.dumps(listed["get_operation"].output_schema))
            async with Client(floor_params, read_timeout_seconds=60, mode="legacy") as floor:
                return await _interleaved(client, floor, http, op_id, calls)


async def _interleaved(client, floor, http: httpx.Client, op_id: str,
                       calls: int) -> dict[str, float]:
    rest, via_mcp, whoami, sdk = [], [], [], []
    for _ in range(20):  # warm every path
        await client.call_tool("get_operation", {"operation_id": op_id})
        await floor.call_tool("get_fixed", {})
        http.get(f"/api/v1/operations/{op_id}")
    for _ in range(calls):
        start = time.perf_counter()
        await floor.call_tool("get_fixed", {})
        sdk.append(time.perf_counter() - start)
        start = time.perf_counter()
        http.get(f"/api/v1/operations/{op_id}").raise_for_status()
        rest.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = await client.call_tool("get_operation", {"operation_id": op_id})
        via_mcp.append(time.perf_counter() - start)
        assert not result.is_error, result.content
        start = time.perf_counter()
        await client.call_tool("whoami", {})
        whoami.append(time.perf_counter() - start)
    return {"rest": _p50(rest), "mcp": _p50(via_mcp), "whoami": _p50(whoami),
            "sdk": _p50(sdk)}


# -- the run -----------------------------------------------------------------------------------

def machine() -> str:
    model = "unknown CPU"
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10, help="per wrk run")
    parser.add_argument("--connections", default="1,8,64")
    parser.add_argument("--mcp-calls", type=int, default=300, help="0: skip the MCP figures")
    parser.add_argument("--web-args", default="",
                        help="flags for `hypd web` instead of its defaults, e.g. "
                             "'--threads 8' (to compare a setting in the same conditions)")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    print(f"machine: {machine()}")
    web_args = tuple(args.web_args.split())
    print(f"hypd web {' '.join(web_args) or '(its defaults)'}")
    stack = Stack(web_args=web_args).start()  # by default hypd web's own defaults
    floor = None
    try:
        with stack.client() as c:
            op_id = c.post("/api/v1/networks", json={"name": "bench"}).json()["operation"]["id"]
        op = stack.wait_operation(op_id)
        assert op["status"] == "succeeded", op
        body = httpx.get(f"{stack.url}/api/v1/operations/{op_id}", headers={
            "Authorization": f"Bearer {stack.operator_token}"}).content
        conn = stack.redis()
        conn.hset("floor:op", mapping={"json": body.decode()})
        floor, floor_url = start_floor(stack.redis_url)
        print(f"reply: {len(body)} bytes, an operation of {len(op['steps'])} steps")
        from schemas.common import OperationSchema

        problems = OperationSchema().validate(json.loads(body))
        print(f"reply matches OperationSchema: {not problems} {problems or ''}")

        hypd_url = f"{stack.url}/api/v1/operations/{op_id}"
        aws_before = len(stack.sandbox.calls())
        print(f"{'conn':>5} | {'hypd req/s':>10} {'p50 ms':>7} {'p99 ms':>7} | "
              f"{'floor req/s':>11} {'p50 ms':>7} {'p99 ms':>7} | {'rps ratio':>9} "
              f"{'p99 ratio':>9} | CPU µs/req hypd, floor; voluntary switches/req")
        for connections in (int(c) for c in args.connections.split(",")):
            wrk(hypd_url, stack.operator_token, connections, 2)  # warm-up
            wrk(floor_url + "/floor/op", FLOOR_TOKEN, connections, 2)
            ours = wrk(hypd_url, stack.operator_token, connections, args.seconds,
                       stack.web_proc.pid)
            base = wrk(floor_url + "/floor/op", FLOOR_TOKEN, connections, args.seconds,
                       floor.pid)
            print(f"{connections:>5} | {ours['rps']:>10.0f} {ours['p50']:>7.2f} "
                  f"{ours['p99']:>7.2f} | {base['rps']:>11.0f} {base['p50']:>7.2f} "
                  f"{base['p99']:>7.2f} | {ours['rps'] / base['rps']:>9.2f} "
                  f"{ours['p99'] / base['p99']:>9.2f} | {ours['cpu_us']:>6.0f} "
                  f"{base['cpu_us']:>6.0f} {ours['vcsw']:>5.1f} {base['vcsw']:>5.1f}"
                  + (f"  (non-2xx: hypd {ours['non2xx']}, floor {base['non2xx']})"
                     if ours["non2xx"] or base["non2xx"] else ""))
        print(f"AWS calls made while serving the status reads: "
              f"{len(stack.sandbox.calls()) - aws_before}")

        if args.mcp_calls <= 0:
            return
        reply_file = stack.tmp / "operation-reply.json"
        reply_file.write_bytes(body)
        figures = asyncio.run(mcp_against_rest(stack, op_id, args.mcp_calls, reply_file))
        print(f"sequential, one keep-alive client, p50 of {args.mcp_calls}: REST read "
              f"{figures['rest']:.2f} ms; MCP get_operation over stdio {figures['mcp']:.2f} ms "
              f"({figures['mcp'] / figures['rest']:.2f}x); MCP whoami {figures['whoami']:.2f} ms; "
              f"the SDK's floor (a stdio tool returning the same reply with get_operation's "
              f"output schema, no HTTP) "
              f"{figures['sdk']:.2f} ms; get_operation less that floor "
              f"{figures['mcp'] - figures['sdk']:.2f} ms "
              f"({(figures['mcp'] - figures['sdk']) / figures['rest']:.2f}x the REST read)")
    finally:
        if floor is not None:
            os.killpg(floor.pid, 15)
            floor.wait()
        stack.stop()


if __name__ == "__main__":
    main()
