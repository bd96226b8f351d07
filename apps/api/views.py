from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from .errors import api_error
from .ratelimit import redis_status


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return api_error("not-found", f"There is no API endpoint at {request.path}.")


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    """For load balancers and operators: each part's state in the body.

    503 when the database does not answer (nothing works without it); 200 with status
    "degraded" when only Redis is down, since the API keeps serving with per-process limits.
    """
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        database = "ok"
    except Exception:
        database = "down"
    redis = redis_status()
    if database != "ok":
        status = "unavailable"
    elif redis not in ("ok", "not configured"):
        status = "degraded"
    else:
        status = "ok"
    body = {"status": status, "database": database, "redis": redis}
    response = JsonResponse(body, status=503 if database != "ok" else 200)
    response["Cache-Control"] = "no-store"
    return response
