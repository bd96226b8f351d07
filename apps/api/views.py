from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from apps.metering.limits import redis_status

from .errors import api_error


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return api_error("not-found", f"There is no API endpoint at {request.path}.")


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    """For load balancers and operators: each part's state in the body.

    503 when the database does not answer (nothing works without it), or when the static
    files were never collected (every dashboard page would fail: the release is not complete,
    and a load balancer or a deploy's health gate should not send anyone to it); 200 with
    status "degraded" when only Redis is down, since the API keeps serving with per-process
    limits.
    """
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        database = "ok"
    except Exception:
        database = "down"
    redis = redis_status()
    queue = _queue_status() if database == "ok" else {}
    static = _static_status()
    if database != "ok" or static != "ok":
        status = "unavailable"
    elif redis not in ("ok", "not configured") or queue.get("state") != "ok":
        status = "degraded"
    else:
        status = "ok"
    body = {"status": status, "database": database, "redis": redis, "queue": queue}
    body["static"] = static
    response = JsonResponse(body, status=503 if status == "unavailable" else 200)
    response["Cache-Control"] = "no-store"
    return response


QUEUE_LATE_SECONDS = 120
NOT_COLLECTED = "not collected: run manage.py collectstatic, then restart"


def _static_status() -> str:
    """Whether the pages can name their static files: with a manifest storage (DEBUG off),
    the manifest `collectstatic` writes, as this process read it when it started."""
    from django.contrib.staticfiles.storage import staticfiles_storage

    if hasattr(staticfiles_storage, "hashed_files") and not staticfiles_storage.hashed_files:
        return NOT_COLLECTED
    return "ok"


def _queue_status() -> dict[str, object]:
    """The task queue: how long the oldest due task has waited, how many workers beat,
    whether the schedule ticks. Late (degraded) when a task has waited over two minutes:
    nobody serves the queue (no worker, or too few for the work)."""
    from apps.jobs.queue import queue_age
    from apps.jobs.schedule import schedule_late
    from apps.jobs.workers import workers_alive

    try:
        age = queue_age()
        late = schedule_late()
        workers = workers_alive()
    except Exception:
        return {"state": "unknown"}
    state = "late" if age > QUEUE_LATE_SECONDS or late else "ok"
    return {
        "state": state,
        "oldest_waiting_seconds": age,
        "workers": workers,
        "schedule_late": late,
    }
