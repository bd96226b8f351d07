"""A task that failed because its own database connection died is run again, not marked
failed (the fault run saw webhook fan-outs lost that way); a task's own errors stay its result;
a scheduled job that failed runs again within five minutes, not a day later."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, OperationalError
from django.utils import timezone
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from apps.jobs.management.commands import worker as worker_command
from apps.jobs.management.commands.worker import ResilientWorker
from apps.jobs.models import ScheduledJob
from apps.jobs.schedule import Job, jobs_run_due

FAILURES: list[BaseException] = []


@task()
def flaky() -> str:
    if FAILURES:
        raise FAILURES.pop(0)
    return "done"


def _work_through_the_queue(monkeypatch) -> None:
    monkeypatch.setattr(worker_command.time, "sleep", lambda seconds: None)
    ResilientWorker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="retry-test",
        excluded_queue_names=[],
    ).run()


@pytest.mark.django_db(transaction=True)
def test_a_task_whose_connection_died_runs_again_and_a_tasks_own_error_fails_it(monkeypatch):
    FAILURES[:] = [OperationalError("server closed the connection unexpectedly")] * 2
    survived = flaky.enqueue()
    _work_through_the_queue(monkeypatch)
    row = DBTaskResult.objects.get(pk=survived.id)
    assert (row.status, row.return_value, len(row.worker_ids)) == ("SUCCESSFUL", "done", 3)

    FAILURES[:] = [IntegrityError("duplicate key")]  # what the task did: its result
    failed = flaky.enqueue()
    _work_through_the_queue(monkeypatch)
    assert DBTaskResult.objects.get(pk=failed.id).status == "FAILED"

    FAILURES[:] = [OperationalError("gone")] * 10  # never back: it fails after five attempts
    gave_up = flaky.enqueue()
    _work_through_the_queue(monkeypatch)
    row = DBTaskResult.objects.get(pk=gave_up.id)
    assert (row.status, len(row.worker_ids)) == ("FAILED", 5)


@pytest.mark.django_db
def test_a_failed_daily_job_runs_again_within_five_minutes(monkeypatch):
    from apps.jobs import schedule

    calls = []

    def fails_once() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr(schedule, "_jobs", {"daily": Job("daily", timedelta(days=1), fails_once)})
    now = timezone.now()
    assert jobs_run_due(now) == ["daily"]
    assert "OperationalError" in ScheduledJob.objects.get(name="daily").last_error
    assert jobs_run_due(now + timedelta(minutes=4)) == []
    assert jobs_run_due(now + timedelta(minutes=5)) == ["daily"]
    assert ScheduledJob.objects.get(name="daily").last_error == ""
    assert jobs_run_due(now + timedelta(hours=2)) == []  # back on its daily schedule
