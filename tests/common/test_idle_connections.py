"""What a part holds while it waits, and what /healthz says of a release (issue 42, item 8): a
task worker holds one database connection, not one more for its heartbeat; an app process with
no request gives its connection back within seconds, not at its next request; /healthz answers
503 when the static files were never collected, as every page would fail."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from tests.jobs.test_workers import Worker, _database_env, _wait_for

ROOT = Path(__file__).resolve().parents[2]


def other_backends() -> int:
    """Connections to this test database other than the test's own connection (this process
    may hold more, a thread's from an earlier test: the tests count from a baseline)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


def _direct_only() -> None:
    if os.environ.get("GATEHOUSE_PGBOUNCER"):
        pytest.skip("through PgBouncer the server connections are the pool's, not the client's")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_idle_task_worker_holds_one_connection(tmp_path):
    _direct_only()
    from apps.jobs.models import WorkerHeartbeat

    baseline = other_backends()
    worker = Worker(_database_env(), tmp_path / "worker.log")
    try:
        assert _wait_for(lambda: WorkerHeartbeat.objects.exists())
        # Its start may still be closing what it opened for a moment (a fresh-clone CI saw a
        # first sample of 2): wait for it to settle at one, then it must stay there. The old
        # fault, a heartbeat connection kept open, never settles and fails here.
        assert _wait_for(lambda: other_backends() - baseline == 1, timeout=10)
        samples = []
        for _ in range(20):
            samples.append(other_backends() - baseline)
            time.sleep(0.15)
    finally:
        worker.stop()
    assert max(samples) == 1, samples  # before: 2 in every sample (the heartbeat's kept open)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_app_process_gives_its_connection_back_when_no_request_comes(tmp_path):
    _direct_only()
    import urllib.request

    port = _free_port()
    baseline = other_backends()
    env = {**_database_env(), "DEBUG": "true", "HOME": str(tmp_path)}
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    # --timeout 4: the worker's loop wakes every 2 s between requests (15 s by default)
    command = [gunicorn, "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "1", "--timeout", "4"]
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5)
                break
            except OSError:
                time.sleep(0.2)
        assert other_backends() == baseline + 1  # the request's, kept (CONN_MAX_AGE 60)
        last_request = time.monotonic()
        assert _wait_for(lambda: other_backends() == baseline, timeout=30)
        seconds = time.monotonic() - last_request
    finally:
        server.terminate()
        server.wait(30)
    assert seconds < 20  # before: held until CONN_MAX_AGE had passed and a request came


@pytest.mark.django_db
def test_healthz_is_503_while_the_static_files_are_not_collected(client, settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    answer = client.get("/healthz")
    assert answer.status_code == 503
    assert answer.json()["status"] == "unavailable"
    assert "collectstatic" in answer.json()["static"]
    call_command("collectstatic", "--noinput", verbosity=0)
    settings.STORAGES = {**settings.STORAGES}  # a restart: the manifest read again
    answer = client.get("/healthz")
    assert answer.json()["static"] == "ok"
    assert answer.json()["status"] != "unavailable"
