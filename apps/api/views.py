from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from .errors import api_error


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return api_error("not-found", f"There is no API endpoint at {request.path}.")


@require_GET
def health(request: HttpRequest) -> JsonResponse:
    """For load balancers: 200 when the database answers, 503 when it does not."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return JsonResponse({"status": "unavailable", "database": "down"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})
