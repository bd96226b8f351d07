"""GET /healthz: each part's state in the body, for load balancers and operators, from the
checks /readyz runs (probes.py)."""

import logging

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from apps.metering.limits import redis_status

from .probes import database_check, queue_status, static_status

logger = logging.getLogger("apps.operations")


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    """503 when the database does not answer (nothing works without it), or when the static
    files were never collected (every dashboard page would fail: the release is not complete,
    and a load balancer or a deploy's health gate should not send anyone to it); 200 with
    status "degraded" when only Redis is down, since the API keeps serving with per-process
    limits, or when the queue is late.
    """
    database = "ok" if database_check().ok else "down"
    redis = redis_status()
    queue = queue_status() if database == "ok" else {}
    static = static_status()
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
    if status == "unavailable":
        # Said once as a warning, as /readyz does: Django would log every probe's 503 as an error.
        logger.warning("Unhealthy: database %s, static files %s", database, static)
        response._has_been_logged = True  # type: ignore[attr-defined] # Django's log_response
    return response
