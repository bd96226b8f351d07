import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .errors import api_error

logger = logging.getLogger("apps.api")

API_PREFIX = "/api/"
REASON_BY_STATUS = {
    400: "invalid-input",
    404: "not-found",
    405: "method-not-allowed",
    413: "payload-too-large",
    415: "unsupported-media-type",
}


class api_errors_as_json:  # noqa: N801 - named like a function middleware, which it stands for
    """Every response under /api/ is JSON: unexpected errors become `internal-error`, and an
    HTML error page rendered by Django itself (a bad Host header, say) becomes its JSON twin."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith(API_PREFIX)
            and response.status_code >= 400
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            reason = REASON_BY_STATUS.get(response.status_code, "internal-error")
            response = api_error(reason)
        if request.path.startswith(API_PREFIX) and not response.has_header("Cache-Control"):
            # Answers depend on the caller's key: no shared cache may keep them.
            response["Cache-Control"] = "no-store"
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        # The request itself is not logged: its headers carry the caller's secret.
        logger.error("Unhandled error on %s %s", request.method, request.path, exc_info=exception)
        return api_error("internal-error")
