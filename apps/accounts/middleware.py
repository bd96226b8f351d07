"""Session lifetime: signed out after an idle spell, and a fixed time after signing in."""

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse

SIGNED_IN_AT = "signed_in_at"
SEEN_AT = "seen_at"
# The last-seen time is written at most this often, so reading pages does not write the
# session on every request.
SEEN_RESOLUTION_SECONDS = 60


def session_lifetime(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated:
            now = time.time()
            session = request.session
            signed_in_at = session.setdefault(SIGNED_IN_AT, now)
            seen_at = session.get(SEEN_AT, now)
            idle = now - seen_at > settings.SESSION_IDLE_TIMEOUT_SECONDS
            too_old = now - signed_in_at > settings.SESSION_ABSOLUTE_LIFETIME_SECONDS
            if idle or too_old:
                logout(request)
                messages.info(
                    request,
                    "You were signed out after "
                    + ("a spell without activity." if idle else "the longest session we allow.")
                    + " Sign in again to continue.",
                )
            elif now - seen_at >= SEEN_RESOLUTION_SECONDS or SEEN_AT not in session:
                session[SEEN_AT] = now
        return get_response(request)

    return middleware


def start_session_clock(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    """On sign-in: the absolute lifetime and the idle timer start now."""
    if request is not None and hasattr(request, "session"):
        now = time.time()
        request.session[SIGNED_IN_AT] = now
        request.session[SEEN_AT] = now
