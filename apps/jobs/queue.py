"""The task queue as operators see it: what waits, and for how long."""

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Min, QuerySet
from django.utils import timezone


def waiting_tasks(task: Any = None) -> QuerySet[Any]:
    """Tasks of the database backend that are ready or scheduled and not yet taken by a
    worker (optionally one task's)."""
    from django_tasks import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    waiting = DBTaskResult.objects.filter(status=TaskResultStatus.READY)
    if task is not None:
        waiting = waiting.filter(task_path=task.module_path)
    return waiting


def queue_age(now: datetime | None = None) -> float:
    """Seconds the oldest task due to run has waited (0 when none is due): what tells a
    monitor that no worker is running."""
    from django_tasks_db.models import get_date_max

    now = now or timezone.now()
    waiting = waiting_tasks()
    # A task without a run_after is stored with the largest date; it is due from its enqueueing.
    unscheduled = waiting.filter(run_after=get_date_max()).aggregate(Min("enqueued_at"))
    scheduled = waiting.filter(run_after__lte=now).aggregate(Min("run_after"))
    due = [d for d in (*unscheduled.values(), *scheduled.values()) if d is not None]
    return round((now - min(due)).total_seconds(), 1) if due else 0.0


RESULTS_KEPT = timedelta(days=7)


def task_results_prune(now: datetime | None = None) -> int:
    """Delete the rows of tasks finished more than 7 days ago; daily."""
    from django_tasks_db.models import DBTaskResult

    now = now or timezone.now()
    deleted, _ = DBTaskResult.objects.finished().filter(finished_at__lt=now - RESULTS_KEPT).delete()
    return deleted
