"""The dashboard's requests in the metrics: every request the API's front door passes on."""

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from apps.common.logging import request_context
from apps.common.metrics import request_observed


def dashboard_metrics(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Count and time each dashboard request under its route's name (a bounded label: never
    the path, which holds ids)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        request_context.set(None)
        response = get_response(request)
        match = getattr(request, "resolver_match", None)
        operation = (match.view_name or "other") if match is not None else "unmatched"
        request_observed(
            "dashboard", operation, response.status_code, "", time.perf_counter() - started
        )
        return response

    return middleware
