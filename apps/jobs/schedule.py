"""Jobs that run on a schedule, on the task queue (Django's tasks interface, `django-tasks`).

Apps register their jobs in ready() (`register_job`). A tick task runs every minute on any
worker: it claims each due job's row and runs it there. The tick enqueues the next tick only
when it claimed its own slot, so duplicate chains die out and one remains. The chain is started
by `migrate` and by `manage.py worker` (apps/jobs/tasks.py), and `/healthz` says when the tick
is late (no worker, or a worker killed in the middle of a tick)."""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from .models import ScheduledJob

logger = logging.getLogger("apps.jobs")

TICK = "_tick"
TICK_EVERY = timedelta(minutes=1)
# A job that failed runs again this soon (a daily job must not wait a day after a blip).
RETRY_AFTER = timedelta(minutes=5)


@dataclass(frozen=True)
class Job:
    name: str
    every: timedelta
    run: Callable[[], object]


_jobs: dict[str, Job] = {}


def register_job(name: str, every: timedelta, run: Callable[[], object]) -> None:
    """Run `run()` every `every` on some worker (first run at the first tick)."""
    _jobs[name] = Job(name, every, run)


def registered_jobs() -> dict[str, Job]:
    return dict(_jobs)


def job_claim(name: str, now: datetime, every: timedelta) -> bool:
    """Take this run of a job: True for exactly one caller per due time."""
    ScheduledJob.objects.get_or_create(name=name, defaults={"next_run_at": now})
    claimed = ScheduledJob.objects.filter(name=name, next_run_at__lte=now).update(
        next_run_at=now + every, last_run_at=now
    )
    return claimed == 1


def jobs_run_due(now: datetime | None = None) -> list[str]:
    """Run every registered job that is due and not taken by another worker; return their
    names. A job that fails is logged and runs again within five minutes (or at its next
    time, if that comes sooner)."""
    now = now or timezone.now()
    ran = []
    for job in list(_jobs.values()):
        if not job_claim(job.name, now, job.every):
            continue
        try:
            job.run()
            error = ""
        except Exception as exc:  # one job's failure never stops the others
            logger.exception("Scheduled job %s failed", job.name)
            error = f"{type(exc).__name__}: {exc}"[:2000]
        retry = {"next_run_at": now + RETRY_AFTER} if error and job.every > RETRY_AFTER else {}
        ScheduledJob.objects.filter(name=job.name).update(last_error=error, **retry)
        ran.append(job.name)
    return ran


def schedule_late(now: datetime | None = None) -> bool:
    """Whether the tick is more than two minutes overdue (False: no tick has run yet)."""
    row = ScheduledJob.objects.filter(name=TICK).first()
    if row is None:
        return False
    return (now or timezone.now()) - row.next_run_at > timedelta(minutes=2)
