"""The dashboard's requests in the metrics and the logs: every request the API's front door
passes on is counted and timed, and has a `Request-Id` its log lines carry."""

import time
from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse

from apps.common.logging import request_context
from apps.common.metrics import request_observed
from apps.metering.facts import new_request_id


@dataclass(frozen=True, slots=True)
class PageContext:
    """What a page's log lines say of it: its request id (the answer's `Request-Id`)."""

    request_id: str


def dashboard_metrics(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Count and time each dashboard request under its route's name (a bounded label: never
    the path, which holds ids)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        context = PageContext(new_request_id())
        request_context.set(context)
        response = get_response(request)
        response.headers.setdefault("Request-Id", context.request_id)
        match = getattr(request, "resolver_match", None)
        operation = (match.view_name or "other") if match is not None else "unmatched"
        request_observed(
            "dashboard", operation, response.status_code, "", time.perf_counter() - started
        )
        return response

    return middleware
