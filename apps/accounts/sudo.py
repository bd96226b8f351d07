"""Sudo mode, as GitHub has it: sensitive actions need a password or second factor entered in
the last few minutes (ACCOUNT_REAUTHENTICATION_TIMEOUT), at sign-in or on allauth's
re-authentication page. A POST that needs it is kept, and replayed once the person has
re-authenticated."""

import time
from collections.abc import Callable
from functools import wraps
from typing import Any, overload

from allauth.account.internal.flows.login import get_authentication_records
from allauth.core.exceptions import ReauthenticationRequired
from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase


def authenticated_recently(request: HttpRequest) -> bool:
    """Whether the signed-in user gave a password or second factor within the timeout."""
    records = get_authentication_records(request, request.user)
    newest = max((record.get("at", 0) for record in records), default=0)
    return time.time() - newest < settings.ACCOUNT_REAUTHENTICATION_TIMEOUT


ViewFunction = Callable[..., HttpResponseBase]


@overload
def recent_authentication_required(
    view: ViewFunction, *, allow_get: bool = False
) -> ViewFunction: ...


@overload
def recent_authentication_required(
    view: None = None, *, allow_get: bool = False
) -> Callable[[ViewFunction], ViewFunction]: ...


def recent_authentication_required(
    view: ViewFunction | None = None, *, allow_get: bool = False
) -> ViewFunction | Callable[[ViewFunction], ViewFunction]:
    """Send the user to re-authenticate first unless they did recently (`allow_get`: only
    for POST). Put it inside the sign-in check, so anonymous visitors are sent to sign in."""

    def decorator(func: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @wraps(func)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not (allow_get and request.method == "GET") and not authenticated_recently(request):
                # allauth's middleware stores a POST and sends the user to re-authenticate.
                raise ReauthenticationRequired()
            return func(request, *args, **kwargs)

        return wrapper

    return decorator(view) if view is not None else decorator
