from django.conf import settings
from django.http import HttpRequest

from apps.audit.services import Actor


def client_ip(request: HttpRequest) -> str | None:
    """The caller's address: REMOTE_ADDR, or the entry our trusted proxies added to
    X-Forwarded-For. Entries further left were written by the client and are not trusted."""
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        forwarded = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [p for p in forwarded if p]
        if len(forwarded) >= proxies:
            return forwarded[-proxies] or None
    return request.META.get("REMOTE_ADDR") or None


def request_actor(request: HttpRequest) -> Actor:
    """The audit actor of a request: its API key when it came through the API, else its user."""
    key = getattr(request, "api_key", None)
    if key is not None:
        return Actor.of_key(key, client_ip(request))
    return Actor.of_user(request.user, client_ip(request))
