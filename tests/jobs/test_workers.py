"""Task workers past one machine (docs/product.md §7): a worker outlives the database going
away, a dead worker's task is taken back within two minutes, /healthz says when nobody
serves the queue, and SIGTERM stops a worker after the task at hand."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from apps.common.tasks import send_email
from apps.jobs.models import WorkerHeartbeat
from apps.jobs.workers import LEASE, tasks_recover, worker_heartbeat, workers_alive

ROOT = Path(__file__).resolve().parents[2]


def _running_on(worker_id: str) -> DBTaskResult:
    result = send_email.enqueue("Subject", "Body", ["someone@example.com"])
    row = DBTaskResult.objects.get(pk=result.id)
    row.claim(worker_id)
    return row


@pytest.mark.django_db
def test_a_task_of_a_worker_that_stopped_beating_goes_back_to_the_queue():
    now = timezone.now()
    worker_heartbeat("dead", now - LEASE - timedelta(seconds=1))
    worker_heartbeat("alive", now)
    with time_machine.travel(now - LEASE - timedelta(seconds=5), tick=False):
        lost = _running_on("dead")
        long_task = _running_on("alive")
    assert tasks_recover(now) == 1
    lost.refresh_from_db()
    long_task.refresh_from_db()
    assert lost.status == TaskResultStatus.READY  # any worker takes it again
    assert long_task.status == TaskResultStatus.RUNNING  # its worker is alive: a long task
    assert tasks_recover(now) == 0  # nothing twice


@pytest.mark.django_db
def test_a_task_just_claimed_is_left_alone_even_before_its_worker_beats():
    _running_on("new-worker")
    assert tasks_recover(timezone.now()) == 0


@pytest.mark.django_db
def test_healthz_says_when_nobody_serves_the_queue_within_two_minutes(client):
    with time_machine.travel(timezone.now() - timedelta(minutes=3), tick=False):
        send_email.enqueue("Subject", "Body", ["someone@example.com"])
    body = client.get("/healthz").json()
    assert body["status"] == "degraded" and body["queue"]["state"] == "late"
    assert body["queue"]["workers"] == 0
    worker_heartbeat("w1")
    assert workers_alive() == 1
    assert client.get("/healthz").json()["queue"]["workers"] == 1


class Worker:
    """`manage.py worker` in a process of its own, its log in a file (a pipe nobody reads
    while the test waits would fill up and stop the worker mid-log)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "worker", "--", "--no-startup-delay", "--no-reload"]
                + ["--interval", "0.1", "--verbosity", "1"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> str:
        """SIGTERM, as systemd or a container runtime stops it; returns its log."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        return self.log.read_text()


def _database_env() -> dict[str, str]:
    database = django_settings.DATABASES["default"]
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
        f"{database['PORT'] or 5432}/{database['NAME']}",
        "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
    }


def _wait_for(condition, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def _terminate_other_backends() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_worker_outlives_every_backend_terminated_and_loses_nothing(tmp_path):
    worker = Worker(_database_env(), tmp_path / "worker.log")
    try:
        first = [send_email.enqueue("One", "Body", ["a@example.com"]).id for _ in range(5)]
        assert _wait_for(
            lambda: DBTaskResult.objects.filter(pk__in=first, status="SUCCESSFUL").count() == 5
        )
        assert _wait_for(lambda: WorkerHeartbeat.objects.exists())
        second = [send_email.enqueue("Two", "Body", ["b@example.com"]).id for _ in range(300)]
        # A restart or a failover while it works: every connection of the worker dropped, again
        # and again for three seconds, at any point of a task.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            _terminate_other_backends()
            time.sleep(0.05)
        done = _wait_for(
            lambda: DBTaskResult.objects.filter(pk__in=second, status="SUCCESSFUL").count() == 300,
            timeout=120,
        )
        assert worker.process.poll() is None, "it exited: " + worker.log.read_text()[-3000:]
        assert done, sorted(
            DBTaskResult.objects.filter(pk__in=second)
            .exclude(status="SUCCESSFUL")
            .values_list("status", "exception_class_path", "worker_ids")
        )[:5]
    finally:
        output = worker.stop()
    assert worker.process.returncode == 0, output[-3000:]
    if not os.environ.get("GATEHOUSE_PGBOUNCER"):
        # Directly on PostgreSQL it notices, says so and goes on. Through PgBouncer the pooler
        # may replace the terminated server connections between the worker's transactions
        # (server_check_delay = 0), so the worker never sees one drop: nothing to say.
        assert "lost the database" in output
    assert not WorkerHeartbeat.objects.exists()  # a clean stop says goodbye


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_sigterm_stops_a_worker_gracefully(tmp_path):
    worker = Worker(_database_env(), tmp_path / "worker.log")
    try:
        assert _wait_for(lambda: WorkerHeartbeat.objects.exists())
    finally:
        output = worker.stop()
    assert worker.process.returncode == 0, output[-3000:]
    assert "shutting down gracefully" in output
