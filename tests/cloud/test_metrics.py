"""cloud/metrics.py and cloud/metrics_dir.py: each group of processes counts in its own
directory, a start empties only its own, and a scrape merges them all. Each group runs in a
fresh interpreter: multiprocess mode is chosen when prometheus_client is first imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.stack import REPO

GROUP = textwrap.dedent("""
    import sys
    from pathlib import Path
    from cloud.settings import Settings
    from cloud.metrics_dir import prepare

    settings = Settings(metrics_dir=Path(sys.argv[1]))
    mine = prepare(settings, sys.argv[2])
    from cloud import metrics
    metrics.AWS_CALLS.labels("ec2", "CreateVpc").inc(float(sys.argv[3]))
    print(sorted(p.name for p in settings.metrics_path.iterdir()))
    body, content_type = metrics.scrape(settings)
    print(content_type)
    print(body.decode())
    try:
        prepare(settings, "late")
    except RuntimeError as exc:
        print("refused:", exc)
""")


def _group(root, part: str, calls: int) -> str:
    run = subprocess.run([sys.executable, "-c", GROUP, str(root), part, str(calls)], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_groups_count_apart_and_a_scrape_merges_them(tmp_path):
    root = tmp_path / "metrics"
    _group(root, "web-h", 7)  # the web server's previous run
    _group(root, "worker-hypd@h", 2)
    web = _group(root, "web-h", 1)  # a web start empties its own directory only
    assert "['web-h', 'worker-hypd@h']" in web
    assert 'hypd_aws_calls_total{api="CreateVpc",service="ec2"} 3.0' in web  # both groups
    assert "refused: prepare() must run before prometheus_client is imported" in web
    _group(root, "worker-hypd@h", 5)  # the worker restarted: its old counts are gone
    assert 'hypd_aws_calls_total{api="CreateVpc",service="ec2"} 6.0' in _group(root, "x", 0)


def test_importing_the_cli_does_not_import_prometheus_client():
    """So `hypd worker` can still choose the directory (importing the CLI imports the app)."""
    run = subprocess.run([sys.executable, "-c", "import sys, launcher.cli; "
                          "print('prometheus_client' in sys.modules)"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "False", run.stderr


def test_threads_making_a_metric_at_once_make_it_once(monkeypatch):
    """Two threads of a web process meeting a metric first at once: each registering it gave
    the second a DuplicateTimeseries, and its request a 500."""
    import threading
    import time
    import types

    from cloud import metrics

    made = []

    def slow_counter(*args, **kwargs):
        made.append(args)
        time.sleep(0.05)  # the window two threads met in
        return object()

    monkeypatch.setattr(metrics.importlib, "import_module",
                        lambda name: types.SimpleNamespace(Counter=slow_counter))
    metric = metrics._Metric("Counter", "hypd_test_once", "a test metric", ("kind",))
    start = threading.Barrier(8)
    results = []

    def first_use():
        start.wait()
        results.append(metric.made())

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len({id(r) for r in results}) == 1
