"""Headers every dashboard page carries, and a dropped database connection answered with a
page saying to try again rather than a 500."""

import sys
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string
from django.views import defaults

from .retry import (
    RETRY_AFTER_SECONDS,
    Unavailable,
    commits_watched,
    connection_lost,
    retryable,
    run_retried,
    transaction_conflict,
    waited_out,
)

# Only the app's own scripts and styles: no inline script or style, no eval, nothing from
# elsewhere. `data:` images are the QR codes of the authenticator set-up.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def policy_with_form_action(target: str) -> str:
    """The policy for a page whose form may end in a redirect to `target` (a source expression
    such as `https://app.example.com`): browsers check form-action on redirects too."""
    return CONTENT_SECURITY_POLICY.replace("form-action 'self'", f"form-action 'self' {target}")


def suspicious_requests(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[..., Any]:
    """A query string of more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS answered 400 before any
    page reads it: read first by a view (the sign-in redirect), it was a 500 (issue 49)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        try:
            request.GET  # noqa: B018 - parsed here, where its refusal can be answered
        except SuspiciousOperation:
            reason = (
                "Its address carries more fields than this server takes "
                f"({settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} at most)."
            )
            return HttpResponseBadRequest(render_to_string("400.html", {"reason": reason}))
        return get_response(request)

    return middleware


def content_security_policy(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return middleware


def database_retry(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Run a dashboard view once more on a fresh connection when the database dropped the
    first one before anything was committed (apps/common/retry.py); when that fails too, or the
    drop came with the COMMIT, a 503 page saying to try again, with Retry-After. Last in
    MIDDLEWARE, so that its process_exception sees the view's error first; every other
    middleware's own handling (allauth's reauthentication, say) stays as it is."""

    def middleware(request: HttpRequest) -> HttpResponse:
        with commits_watched(connections[DEFAULT_DB_ALIAS]) as sent:
            request.database_commit_sent = sent  # type: ignore[attr-defined]
            return get_response(request)

    def process_view(
        request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any
    ) -> None:
        request.database_view = (view, args, kwargs, _kept(request))  # type: ignore[attr-defined]

    def process_exception(request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not retryable(exception):
            return None
        connection = connections[DEFAULT_DB_ALIAS]
        nested = connection.in_atomic_block
        if not transaction_conflict(exception):
            connection.close()  # the next query opens a fresh one
        sent = getattr(request, "database_commit_sent", [True])
        again = getattr(request, "database_view", None)
        if sent[0] or nested or again is None or waited_out(exception):
            # A wait that ran out is not waited again: the database is away, not a connection.
            return unavailable_page(unsure=sent[0])
        view, args, kwargs, restore = again
        restore()
        try:
            return run_retried(lambda: view(request, *args, **kwargs), attempts=1)
        except Unavailable as error:
            return unavailable_page(unsure=error.unsure)

    middleware.process_view = process_view  # type: ignore[attr-defined]
    middleware.process_exception = process_exception  # type: ignore[attr-defined]
    return middleware


def _kept(request: HttpRequest) -> Callable[[], None]:
    """What puts the request's session and queued messages back as they were before the view,
    for its second run (a create form's one-time token, consumed by the first, included)."""
    session = getattr(request, "session", None)
    saved = dict(session.items()) if session is not None else {}
    storage = getattr(request, "_messages", None)
    queued = list(getattr(storage, "_queued_messages", []))

    def restore() -> None:
        if session is not None:
            session.clear()
            session.update(saved)
        if storage is not None:
            storage._queued_messages[:] = queued

    return restore


def unavailable_page(*, unsure: bool) -> HttpResponse:
    """503 with Retry-After, on a page of its own: base.html asks the database (the
    navigation's counts)."""
    response = HttpResponse(render_to_string("503.html", {"unsure": unsure}), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a dropped database connection anywhere outside a view's retry (loading the
    session or its user, in front of the view) is the page saying to try again, the outcome of
    a POST unknown; anything else is Django's own 500 page. (A failed session save after the
    view stays Django's 400.)"""
    error = sys.exc_info()[1]
    if error is not None and connection_lost(error):
        connections.close_all()
        return unavailable_page(unsure=request.method not in ("GET", "HEAD", "OPTIONS"))
    return defaults.server_error(request)
