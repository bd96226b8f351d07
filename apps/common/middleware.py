"""Headers every dashboard page carries, and a dropped database connection answered with a
page saying to try again rather than a 500."""

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from .retry import (
    RETRY_AFTER_SECONDS,
    Unavailable,
    commits_watched,
    connection_lost,
    run_retried,
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
    MIDDLEWARE: every other middleware's process_view has run (CSRF included), and its
    process_exception is asked first, so any other exception of the view still reaches the
    middleware that answers it (allauth's re-authentication, say)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        try:
            return get_response(request)
        finally:
            watched = vars(request).pop("gatehouse_view_watch", None)
            if watched is not None:
                watched.stack.close()

    def process_view(
        request: HttpRequest, view: Callable[..., HttpResponse], args: Any, kwargs: Any
    ) -> None:
        stack = ExitStack()
        sent = stack.enter_context(commits_watched(connections[DEFAULT_DB_ALIAS]))
        again = _kept(request)
        vars(request)["gatehouse_view_watch"] = _Watch(
            stack, sent, lambda: view(request, *args, **kwargs), again
        )

    def process_exception(request: HttpRequest, exception: Exception) -> HttpResponse | None:
        watched = vars(request).pop("gatehouse_view_watch", None)
        if watched is None or not connection_lost(exception):
            if watched is not None:
                vars(request)["gatehouse_view_watch"] = watched
            return None
        watched.stack.close()
        connection = connections[DEFAULT_DB_ALIAS]
        nested = connection.in_atomic_block
        connection.close()  # the next query opens a fresh one
        try:
            if watched.sent[0] or nested:
                raise Unavailable(str(exception)[:200], unsure=watched.sent[0])
            return run_retried(watched.run, before_retry=watched.again, attempts=(2,))
        except Unavailable as error:
            # A page of its own: base.html asks the database (the navigation's counts).
            page = render_to_string("503.html", {"unsure": error.unsure})
            response = HttpResponse(page, status=503)
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
            return response

    middleware.process_view = process_view  # type: ignore[attr-defined]
    middleware.process_exception = process_exception  # type: ignore[attr-defined]
    return middleware


@dataclass
class _Watch:
    """A dashboard view's first run: whether it sent a COMMIT, how to run it again, and what
    puts the request back as it was before it."""

    stack: ExitStack
    sent: list[bool]
    run: Callable[[], HttpResponse]
    again: Callable[[], None]


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
