"""What each hypd process pays in imports before it does anything, beside the interpreter's
own start (the floor), measured in the same run.

`hypd mcp` is started by an agent (Kiro CLI, Claude Code) for every session, so its start is
a user-facing latency; `hypd worker` and `hypd sandbox` start with `hypd up` and after a
crash. Each line is the median wall time of `python -c "import ..."` in a fresh process
(`--runs` times, interleaved so load drifts hit every line alike).

    python bench/start.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINES = {
    "floor (python -c pass)": "pass",
    "hypd mcp (launcher.cli + mcp_server.server)": "import launcher.cli, mcp_server.server",
    "hypd worker (launcher.cli + tasks.celery_app)": "import launcher.cli, tasks.celery_app",
    "the web app (create_app's parts)": "import app.api, app.ws, app.audit",
}


def _once(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for code in LINES.values():  # warm the file cache once
        _once(code)
    times: dict[str, list[float]] = {name: [] for name in LINES}
    for _ in range(args.runs):
        for name, code in LINES.items():
            times[name].append(_once(code))
    floor = statistics.median(times["floor (python -c pass)"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:45s} {median * 1000:7.0f} ms   {median - floor:6.2f} s above the floor")


if __name__ == "__main__":
    main()
