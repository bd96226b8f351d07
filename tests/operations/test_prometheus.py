"""A real Prometheus (Debian's `prometheus`) scrapes gunicorn with two workers and a task
worker: the request and queue series arrive and add up across the processes, also after a
worker is killed and replaced."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from tests.common.test_logging import ROOT, _free_port

from .live import get, gunicorn, migrated_with_a_key, server_env

PROMETHEUS = "/usr/bin/prometheus"
REQUESTS = 40


def require(binary: str) -> str:
    """The binary's path; skipped when it is missing outside CI, failed in CI."""
    found = shutil.which(binary) or (binary if os.path.exists(binary) else None)
    if found is None:
        message = f"{binary} is missing: apt-get install prometheus"
        if os.environ.get("CI") or os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    return found


class NotReady(OSError):
    """Prometheus answers 503 until it has opened its storage and is ready for queries."""


def query(prometheus: str, expression: str) -> float | None:
    """The value of an instant query's single result (None: no result)."""
    url = f"{prometheus}/api/v1/query?query={urllib.parse.quote(expression)}"
    status, body = get(url)
    if status == 503:
        raise NotReady(body)
    assert status == 200, body
    result = json.loads(body)["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def wait_for(prometheus: str, expression: str, want: float, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    value = None
    while time.monotonic() < deadline:
        try:
            value = query(prometheus, expression)
        except OSError:  # Prometheus still starting, or not ready (seconds on a busy machine)
            value = None
        if value == want:
            return
        time.sleep(0.5)
    raise AssertionError(f"{expression} = {value}, not {want}")


def workers_of(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


@pytest.fixture
def prometheus_binary():
    return require(PROMETHEUS)


def test_prometheus_counts_every_request_across_workers_and_sees_the_queue(
    prometheus_binary, tmp_path
):
    metrics_dir = tmp_path / "metrics"
    env = server_env(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
    secret = migrated_with_a_key(env)
    with gunicorn(env, tmp_path / "server.log", workers=2) as (base, master):
        worker_log = open(tmp_path / "worker.log", "w")
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "worker"], cwd=ROOT, env=env,
            stdout=worker_log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        port = _free_port()
        config = tmp_path / "prometheus.yml"
        target = base.removeprefix("http://")
        config.write_text(
            "global: {scrape_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - job_name: gatehouse\n    static_configs: [{{targets: ['{target}']}}]\n"
        )
        prometheus = subprocess.Popen(
            [
                prometheus_binary, f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"),
        )  # fmt: skip
        server = f"http://127.0.0.1:{port}"
        try:
            auth = {"Authorization": f"Bearer {secret}"}
            for _ in range(REQUESTS):
                assert get(f"{base}/api/v1/workspace", **auth)[0] == 200
            api = 'door="api",operation="get_workspace"'
            wait_for(server, f'sum(gatehouse_requests_total{{{api},status="2xx"}})', REQUESTS)
            wait_for(server, f"sum(gatehouse_request_duration_seconds_count{{{api}}})", REQUESTS)
            wait_for(server, 'sum(gatehouse_key_lookups_total{result="active"})', REQUESTS)
            wait_for(server, 'sum(gatehouse_processes{kind="web"})', 2)
            # The task worker's own series, through the same folder, and the queue's.
            wait_for(server, 'sum(gatehouse_processes{kind="worker"})', 1)
            wait_for(server, "gatehouse_task_workers", 1)
            wait_for(server, "sum(gatehouse_task_worker_heartbeats_total) > bool 0", 1)
            wait_for(server, "count(gatehouse_task_queue_depth)", 1)
            wait_for(server, 'sum(gatehouse_tasks_total{outcome="done"}) > bool 0', 1, 90)
            # A gunicorn worker dies: its replacement counts on, nothing counted is lost.
            served = workers_of(master)
            assert len(served) == 2
            os.kill(served[0], signal.SIGKILL)
            for _ in range(REQUESTS):
                assert get(f"{base}/api/v1/workspace", **auth)[0] == 200
            wait_for(server, f'sum(gatehouse_requests_total{{{api},status="2xx"}})', 2 * REQUESTS)
            wait_for(server, 'sum(gatehouse_processes{kind="web"})', 2)
        finally:
            prometheus.terminate()
            worker.send_signal(signal.SIGTERM)
            prometheus.wait(15)
            worker.wait(30)
            worker_log.close()
