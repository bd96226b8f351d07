"""The checks of /readyz, each a name, whether it passed and a few words: the database answers,
its migrations are applied, Redis answers (when configured), the task queue is served; and the
parts /healthz reports (apps/operations/health.py), from the same checks."""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.metering.limits import redis_status

# A worker beat, or a task finished, within this: someone serves the queue (docs/product.md §7).
QUEUE_SERVED_WITHIN = timedelta(minutes=2)


@dataclass(frozen=True)
class Check:
    """One line of a probe. A check that is not `critical` is shown but never fails the probe:
    a stopped worker must not take every app server out of the load balancer (§15); it is an
    alert instead (deploy/prometheus)."""

    name: str
    ok: bool
    detail: str
    critical: bool = True


_migrated = False  # once every migration is applied, it stays so for this process


def database_check() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:
        return Check("database", False, f"unreachable ({type(error).__name__})")
    return Check("database", True, "answers")


def migrations_check() -> Check:
    """Whether every migration is applied: read from disk until it is, then remembered."""
    global _migrated
    if not _migrated:
        from django.db.migrations.executor import MigrationExecutor

        try:
            executor = MigrationExecutor(connection)
            plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        except Exception as error:
            return Check("migrations", False, f"cannot be read ({type(error).__name__})")
        if plan:
            return Check("migrations", False, f"{len(plan)} not applied: run manage.py migrate")
        _migrated = True
    return Check("migrations", True, "applied")


def redis_check() -> Check | None:
    if not settings.REDIS_URL:
        return None
    status = redis_status()
    return Check("redis", status == "ok", status)


def queue_check() -> Check:
    """Served: a worker beat within two minutes, or a task finished within two minutes."""
    from django_tasks_db.models import DBTaskResult

    from apps.jobs.models import WorkerHeartbeat

    since = timezone.now() - QUEUE_SERVED_WITHIN
    try:
        if WorkerHeartbeat.objects.filter(seen_at__gte=since).exists():
            return Check("queue", True, "a worker beat within 2 minutes", critical=False)
        if DBTaskResult.objects.filter(finished_at__gte=since).exists():
            return Check("queue", True, "a task finished within 2 minutes", critical=False)
    except Exception as error:
        return Check("queue", False, f"cannot be read ({type(error).__name__})", critical=False)
    return Check(
        "queue", False, "no worker beat and no task finished within 2 minutes", critical=False
    )


def readiness() -> list[Check]:
    """Every check of /readyz; those that need the database fail with it."""
    database = database_check()
    checks = [database]
    if database.ok:
        checks += [migrations_check(), queue_check()]
    else:
        checks += [
            Check("migrations", False, "database unreachable"),
            Check("queue", False, "database unreachable", critical=False),
        ]
    redis = redis_check()
    return checks + ([redis] if redis is not None else [])


NOT_COLLECTED = "not collected: run manage.py collectstatic, then restart"


def static_status() -> str:
    """Whether the pages can name their static files: with a manifest storage (DEBUG off),
    the manifest `collectstatic` writes, as this process read it when it started."""
    from django.contrib.staticfiles.storage import staticfiles_storage

    if hasattr(staticfiles_storage, "hashed_files") and not staticfiles_storage.hashed_files:
        return NOT_COLLECTED
    return "ok"


def queue_status() -> dict[str, object]:
    """The task queue in numbers: how long the oldest due task has waited, how many workers
    beat, whether the schedule ticks. Late when a task has waited longer than
    QUEUE_SERVED_WITHIN: nobody serves the queue (no worker, or too few for the work)."""
    from apps.jobs.queue import queue_age
    from apps.jobs.schedule import schedule_late
    from apps.jobs.workers import workers_alive

    try:
        age = queue_age()
        late = schedule_late()
        workers = workers_alive()
    except Exception:
        return {"state": "unknown"}
    state = "late" if age > QUEUE_SERVED_WITHIN.total_seconds() or late else "ok"
    return {
        "state": state,
        "oldest_waiting_seconds": age,
        "workers": workers,
        "schedule_late": late,
    }
