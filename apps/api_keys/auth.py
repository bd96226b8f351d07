"""Bearer authentication for the JSON API."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from apps.api.errors import api_error, insufficient_scope
from apps.api.ratelimit import rate_limit_hit
from apps.common.http import client_ip

from .models import ApiKey
from .scopes import ALL_SCOPES, WRITE_SCOPES
from .services import KeyRejected, api_key_authenticate, api_key_record_use

View = Callable[..., HttpResponse]


def bearer_credential(request: HttpRequest) -> str | None:
    """The credential of an `Authorization: Bearer <credential>` header, or None.

    The scheme name is case-insensitive; another scheme or an empty credential counts as none.
    """
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credential.strip() or None


def api_key_required(
    scope: str | None = None, *, any_write: bool = False, members: bool = False
) -> Callable[[View], View]:
    """Authenticate the bearer key, then check what the operation needs.

    `scope` names the one scope needed; `any_write` accepts any write scope; with neither, any
    active key will do. Member keys are refused unless `members` is set. On success the view gets
    `request.api_key` and `request.workspace`.
    """
    needed: tuple[str, ...] = WRITE_SCOPES if any_write else ((scope,) if scope else ())

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            credential = bearer_credential(request)
            if credential is None:
                return api_error("missing-key")
            now = timezone.now()
            try:
                key = api_key_authenticate(credential, now=now)
            except KeyRejected as rejected:
                return api_error(rejected.reason)
            retry_after = rate_limit_hit(key.pk)
            if retry_after is not None:
                return api_error(
                    "rate-limited",
                    f"Too many requests with this key; try again in {retry_after} seconds.",
                    Retry_After=str(retry_after),
                )
            api_key_record_use(key, ip=lambda: client_ip(request), now=now)
            if key.kind == ApiKey.Kind.MEMBER and not members:
                return insufficient_scope(
                    needed or ALL_SCOPES,
                    "Member keys work only on community endpoints; use a workspace key here.",
                )
            if needed and not set(needed) & set(key.scopes):
                return insufficient_scope(needed)
            request.api_key = key  # type: ignore[attr-defined]
            request.workspace = key.workspace  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
