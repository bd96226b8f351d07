"""Task workers as a group: each beats every few seconds, and a task left running by a worker
that stopped beating (killed, its machine gone) goes back to the queue for another worker.

The database backend of django-tasks marks a task RUNNING when a worker claims it and leaves
it so for ever if that worker dies; a lease on the worker, not on the task, tells a dead
worker from a long task."""

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from apps.common.metrics import instruments

from .models import WorkerHeartbeat

logger = logging.getLogger("apps.jobs")

HEARTBEAT_EVERY = timedelta(seconds=15)
# A worker silent this long is gone: three missed beats. With the recovery job every minute, a
# dead worker's task is back in the queue within 105 s of its last beat (the fault run measured
# 111 s from a kill with a 60 s lease, too near the two minutes promised).
LEASE = timedelta(seconds=45)


def worker_heartbeat(worker_id: str, now: datetime | None = None) -> None:
    WorkerHeartbeat.objects.update_or_create(
        worker_id=worker_id, defaults={"seen_at": now or timezone.now()}
    )
    instruments().heartbeats.inc()


def worker_stopped(worker_id: str) -> None:
    """A worker that stops cleanly says so, so its absence is not mistaken for a death."""
    WorkerHeartbeat.objects.filter(worker_id=worker_id).delete()


def workers_alive(now: datetime | None = None) -> int:
    now = now or timezone.now()
    return WorkerHeartbeat.objects.filter(seen_at__gte=now - LEASE).count()


def tasks_recover(now: datetime | None = None) -> int:
    """Put back in the queue every task RUNNING on a worker that has not beaten within the
    lease; returns how many. Runs every minute on the schedule (any live worker)."""
    from django_tasks import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    now = now or timezone.now()
    alive = set(
        WorkerHeartbeat.objects.filter(seen_at__gte=now - LEASE).values_list("worker_id", flat=True)
    )
    stuck = DBTaskResult.objects.filter(
        status=TaskResultStatus.RUNNING, started_at__lt=now - LEASE
    ).only("id", "worker_ids", "task_path")
    recovered = 0
    for task_result in stuck[:500]:
        if task_result.worker_ids and task_result.worker_ids[-1] in alive:
            continue  # a long task on a live worker
        # Conditional: a worker that finished it a moment ago keeps its result.
        recovered += DBTaskResult.objects.filter(
            pk=task_result.pk, status=TaskResultStatus.RUNNING
        ).update(status=TaskResultStatus.READY, started_at=None)
        logger.warning(
            "Task %s (%s) was left running by a stopped worker; queued again.",
            task_result.pk,
            task_result.task_path,
        )
    WorkerHeartbeat.objects.filter(seen_at__lt=now - timedelta(days=1)).delete()
    return recovered
