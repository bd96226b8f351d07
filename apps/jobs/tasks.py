"""The schedule's tick as a task (any worker may run it), and how the chain of ticks starts."""

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import task

from .queue import waiting_tasks
from .schedule import TICK, TICK_EVERY, job_claim, jobs_run_due

logger = logging.getLogger("apps.jobs")


@task()
def run_schedule_tick() -> None:
    tick()


def tick(now: datetime | None = None) -> None:
    """One tick: when this slot is ours, run the due jobs and enqueue the next tick."""
    now = now or timezone.now()
    # A little slack: the next tick may start a moment before its slot.
    if not job_claim(TICK, now + timedelta(seconds=2), TICK_EVERY - timedelta(seconds=2)):
        return
    jobs_run_due(now)
    with transaction.atomic():
        run_schedule_tick.using(run_after=now + TICK_EVERY).enqueue()


def schedule_ensure() -> bool:
    """Start the tick chain unless a tick is waiting to run; True when one was enqueued."""
    if waiting_tasks(run_schedule_tick).exists():
        return False
    run_schedule_tick.enqueue()
    return True


def schedule_after_migrate(**kwargs: Any) -> None:
    """After `migrate`: make sure the tick chain runs (a deploy restarts it if it died)."""
    if not settings.JOBS_START_ON_MIGRATE:
        return
    try:
        schedule_ensure()
    except Exception:  # the tasks table may not exist yet in a partial migration
        logger.warning("Could not start the schedule after migrate.", exc_info=True)
