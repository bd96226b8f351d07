"""The API's own path through Django: `/api/` and `/mcp` skip the dashboard's middleware.

Sessions, CSRF, authentication, messages, clickjacking and htmx serve browsers; an API request
authenticates by its bearer key alone, so none of them runs for it. `api_front_door` sits first
in MIDDLEWARE, resolves the URL itself and calls the view: a request on this path has no
`request.session` and no `request.user`, so the API cannot accept a session even by mistake,
and it pays only for what it uses.

The endpoints programs call outside the API (OAuth's token, revocation, registration and device
code endpoints, the discovery documents) take the same short way, registered by their app
(`register_machine_paths`), with their own error format (`machine_error`).
"""

import functools
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import (
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
)
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, ResolverMatch, get_resolver

from apps.metering.facts import request_facts
from apps.metering.records import REFUSAL_STATUSES
from apps.metering.requests import finish

from .errors import api_error
from .refusal_log import error_code_of, log_refusal, log_stream_refused

logger = logging.getLogger("apps.api")


API_PREFIX = "/api/"
MCP_PATH = "/mcp"
REASON_BY_STATUS = {
    400: "invalid-input",
    404: "not-found",
    405: "method-not-allowed",
    413: "payload-too-large",
    415: "unsupported-media-type",
}


@functools.lru_cache(maxsize=4096)
def _resolve(path: str, urlconf: str) -> ResolverMatch:
    """The URL resolver's match for `path` under `urlconf`, kept: the same path resolves the
    same way for the life of the process, and most API calls ask for the same few paths
    (misses raise, and are not kept)."""
    return get_resolver(urlconf).resolve(path)


def is_api_path(path: str) -> bool:
    return path.startswith(API_PREFIX) or path == MCP_PATH


MachineError = Callable[[str, int], HttpResponse]
_machine_paths: dict[str, MachineError] = {}


def register_machine_paths(error: MachineError, *paths: str) -> None:
    """Answer `paths` (exact) without the browser middleware, as the API is; `error(message,
    status)` words a refusal or an unexpected error in their own format."""
    for machine_path in paths:
        _machine_paths[machine_path] = error


def refused_as_suspicious(request: HttpRequest) -> str | None:
    """Why Django would refuse the request before any view (a Host this server does not serve,
    a query string of more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS), or None. Asked first at
    every door, so such a request is a 400, never a 500 (issue 49)."""
    try:
        request.get_host()  # ALLOWED_HOSTS, as CommonMiddleware would check it
    except DisallowedHost:
        return "The Host header names a host this server does not serve."
    try:
        request.GET  # noqa: B018 - parsed here, where its refusal can be answered
    except SuspiciousOperation as refused:
        return _suspicious_message(refused)
    return None


def _suspicious_message(refused: SuspiciousOperation) -> str:
    if isinstance(refused, TooManyFieldsSent):
        return (
            "The request has too many fields; at most "
            f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} are taken."
        )
    if isinstance(refused, RequestDataTooBig):
        return "The request body is larger than this server takes."
    return "The request is not one this server takes."


def _machine_answer(request: HttpRequest, error: MachineError) -> HttpResponse:
    # Its id for the answer's Request-Id and its log lines: a failing CLI login is found so.
    request_id = request_facts(request).request_id
    response = _machine_response(request, error)
    response["Request-Id"] = request_id
    return response


def _machine_response(request: HttpRequest, error: MachineError) -> HttpResponse:
    if refusal := refused_as_suspicious(request):
        return error(refusal, 400)
    try:
        match = _resolve(request.path_info, settings.ROOT_URLCONF)
        request.resolver_match = match
        response = match.func(request, *match.args, **match.kwargs)
    except SuspiciousOperation as refused:
        response = error(_suspicious_message(refused), 400)
    except Exception:
        logger.exception("Unhandled error on %s %s", request.method, request.path)
        response = error("The server met an unexpected error.", 500)
    response["X-Content-Type-Options"] = "nosniff"
    _security_headers(request, response)
    _content_length(response)
    return response


def _content_length(response: HttpResponse) -> None:
    """The body's length, as CommonMiddleware would set it on the browser path: without it a
    server speaking HTTP/1.1 sends the answer chunked, one more write and packet a call."""
    if response.streaming or response.status_code in (204, 304):  # no body, no length (RFC 9110)
        return
    if not response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))


def _answer(request: HttpRequest) -> HttpResponse:
    if refusal := refused_as_suspicious(request):
        return api_error("invalid-input", refusal)
    if settings.SECURE_SSL_REDIRECT and not request.is_secure():
        # A redirect would come too late: the key has already crossed the network in clear.
        return api_error("https-required")
    try:
        match = _resolve(request.path_info, settings.ROOT_URLCONF)
    except Resolver404:
        return api_error("not-found", f"There is no API endpoint at {request.path}.")
    request.resolver_match = match
    # Django checks a reused connection with a `SELECT 1` before the first query of every
    # request (CONN_HEALTH_CHECKS); on this path that would double the statements of a call.
    # The key lookup, the first query here, reconnects and retries once instead.
    connection.health_check_done = True  # type: ignore[attr-defined]
    return match.func(request, *match.args, **match.kwargs)


class api_front_door:  # noqa: N801 - named like a function middleware, which it stands for
    """Answer API and MCP requests without the dashboard's middleware; pass the rest on.

    Every answer under the API is JSON (an unexpected error is `internal-error`, never an HTML
    page or a stack trace) and may not be stored by any cache.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api_path(request.path_info):
            machine_error = _machine_paths.get(request.path_info)
            if machine_error is None or (
                settings.SECURE_SSL_REDIRECT and not request.is_secure()
            ):  # the browser path redirects plain http to https
                return self.get_response(request)
            return _machine_answer(request, machine_error)
        facts = request_facts(request)  # its id and its start, first
        if request.path_info == MCP_PATH:
            facts.door = "mcp"
        try:
            response = _answer(request)
        except RequestDataTooBig:
            response = api_error("payload-too-large")
        except SuspiciousOperation as refused:  # a form body of too many fields, say
            response = api_error("invalid-input", _suspicious_message(refused))
        except Exception:
            # The request itself is not logged: its headers carry the caller's secret.
            logger.exception(
                "Unhandled error on %s %s (%s)", request.method, request.path, facts.request_id
            )
            response = api_error("internal-error")
        if response.status_code >= 400 and not response.get("Content-Type", "").startswith(
            "application/json"
        ):
            response = api_error(REASON_BY_STATUS.get(response.status_code, "internal-error"))
        if not response.has_header("Cache-Control"):
            # Answers depend on the caller's key: no shared cache may keep them.
            response["Cache-Control"] = "no-store"
        response["X-Content-Type-Options"] = "nosniff"
        response["Request-Id"] = facts.request_id
        _security_headers(request, response)
        _content_length(response)
        status = response.status_code
        error = error_code_of(response) if status >= 400 else ""
        if status in REFUSAL_STATUSES:
            log_refusal(request, response, error)
        elif (request.method, request.path_info, status) == ("GET", MCP_PATH, 405):
            log_stream_refused(request, response)
        finish(request, status, error)
        return response


# A JSON answer is never a document: should a browser render one, it may load nothing, run
# nothing and be framed by nobody, and it shares no window with the page that opened it.
MACHINE_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


def _security_headers(request: HttpRequest, response: HttpResponse) -> None:
    """What SecurityMiddleware adds to the dashboard's answers, which this path skips, and a
    policy that lets a JSON answer do nothing as a page."""
    response.setdefault("Content-Security-Policy", MACHINE_CSP)
    response.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    if settings.SECURE_REFERRER_POLICY:
        response.setdefault("Referrer-Policy", settings.SECURE_REFERRER_POLICY)
    if settings.SECURE_HSTS_SECONDS and request.is_secure():
        value = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            value += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            value += "; preload"
        response.setdefault("Strict-Transport-Security", value)
