"""Bearer authentication and authorization, the same for every door (HTTP API and MCP)."""

import threading
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from apps.api.errors import ApiFailure, insufficient_scope
from apps.api.operations import Needs
from apps.api.scopes import ALL_SCOPES, WRITE_SCOPES
from apps.common.wording import pluralize
from apps.metering.facts import request_facts
from apps.metering.requests import admit
from apps.quotas.counting import holder_of, quota_take
from apps.quotas.uses import spent_text
from apps.workspaces.models import Membership

from . import tokens
from .models import ApiKey
from .restrictions import address_allowed
from .verification import (
    KeyRejected,
    api_key_authenticate,
    api_key_note_scope_use,
    api_key_note_use,
)

OLD_SECRET_REFUSED = (
    "This is the key's old secret, still accepted during its grace period: it serves its "
    "integration only (reading and calling operations), never managing keys. Use the key's "
    "current secret for this."
)


def bearer_credential(request: HttpRequest) -> str | None:
    """The credential of an `Authorization: Bearer <credential>` header, or None.

    The scheme name is case-insensitive; another scheme or an empty credential counts as none.
    """
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credential.strip() or None


class _BlockedAddresses:
    """Client addresses whose bad credentials this process refuses with 429 for a while, after
    too many failed authentications. A valid key from a blocked address is served as ever:
    an office behind one NAT, or a load balancer without the trusted-proxy setting, must not
    be locked out by one client that keeps sending a revoked key.

    The failures are counted in the shared rate limiter (Redis across app servers, when
    configured); this per-process copy spares a blocked address's next bad credentials the
    counting round trip. It is looked at only on a refusal, so the hot path pays nothing.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.until: dict[str, float] = {}

    def retry_after(self, ip: str, now: float) -> int | None:
        until = self.until.get(ip)
        if until is None:
            return None
        if until <= now:
            with self.lock:
                self.until.pop(ip, None)
            return None
        return max(1, int(until - now + 0.999))

    def block(self, ip: str, seconds: int, now: float) -> None:
        with self.lock:
            self.until = {a: u for a, u in self.until.items() if u > now}
            self.until[ip] = now + seconds

    def clear(self) -> None:
        with self.lock:
            self.until.clear()


blocked_addresses = _BlockedAddresses()


def _too_many_failures(retry_after: int) -> ApiFailure:
    return ApiFailure(
        "rate-limited",
        "Too many failed authentications from this address; try again in "
        f"{retry_after} second{pluralize(retry_after)}.",
        Retry_After=str(retry_after),
    )


def _count_failed_authentication(request: HttpRequest) -> None:
    """Count a refused credential against the client's address; 429 once it is over the limit
    (and for the address's further bad credentials while the block lasts)."""
    ip = request_facts(request).client_ip or "unknown"
    now = time.time()
    if blocked_addresses.until:
        retry_after = blocked_addresses.retry_after(ip, now)
        if retry_after is not None:
            raise _too_many_failures(retry_after)
    state = admit(request, limit=settings.API_AUTH_FAILURES_PER_MINUTE, failed_credential=True)
    if state is not None and state.retry_after is not None:  # refused
        blocked_addresses.block(ip, state.retry_after, now)
        raise _too_many_failures(state.retry_after)


def api_key_from_request(request: HttpRequest) -> ApiKey:
    """The active key the request carries, counted against its rate limit and stamped as used.

    Raises ApiFailure with the 401 or 429 of the error table. What it learns (the key, its
    rate-limit standing for rate_limit_headers(), how it was counted) goes to the request's
    facts.
    """
    credential = bearer_credential(request)
    if credential is None:
        raise ApiFailure("missing-key")
    facts = request_facts(request)
    now = timezone.now()
    try:
        key = api_key_authenticate(credential, now=now)
    except KeyRejected as rejected:
        # For the refusal's log line: the hint identifies a key of ours without revealing it.
        facts.key_id = rejected.key_id
        facts.key_hint = tokens.hint_for(credential) if tokens.kind_of(credential) else None
        _count_failed_authentication(request)
        raise ApiFailure(rejected.reason) from None
    facts.key_id = key.pk
    facts.key_hint = key.hint
    address = facts.client_ip
    if key.allowed_networks and not address_allowed(key.allowed_networks, address):
        # Refused before the rate limit: a stolen key used from elsewhere must not be able to
        # spend its holder's requests. The refusal is counted against the key (its log line).
        raise ApiFailure(
            "ip-not-allowed",
            f"This key accepts requests only from its allowed networks, and "
            f"{address or 'this address'} is not in them.",
        )
    holder = holder_of(key)
    quota = quota_take(holder, now) if holder is not None else None
    limit = key.rate_limit_per_minute or settings.API_RATE_LIMIT_PER_MINUTE
    state = admit(request, limit=limit, now=now, quota=quota)
    if state is not None and state.quota_spent and holder is not None:
        raise ApiFailure("quota-exceeded", spent_text(holder, now), **state.headers())
    if state is not None and state.refused:
        raise ApiFailure(
            "rate-limited",
            f"Too many requests with this key; try again in {state.retry_after} "
            f"second{pluralize(state.retry_after)}.",
            **state.headers(),
        )
    api_key_note_use(key, ip=address, now=now)
    return key


def rate_limit_headers(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """Add the RateLimit fields of the request's key, when it has been counted, to `response`."""
    state = request_facts(request).rate_limit
    if state is not None:
        for name, value in state.headers().items():
            response.headers.setdefault(name, value)
    return response


def needed_scopes(needs: Needs) -> tuple[str, ...]:
    """The scopes of which a key must hold at least one (empty: any key will do)."""
    if needs.any_write:
        return WRITE_SCOPES
    return (needs.scope,) if needs.scope else ()


def key_may(key: ApiKey, needs: Needs) -> bool:
    """Whether the key's kind and scopes allow the operation (roles are checked on the call)."""
    if key.kind == ApiKey.Kind.MEMBER and not needs.members:
        return False
    if key.called_with_previous_secret and needs.manages_keys:
        return False
    scopes = needed_scopes(needs)
    return not scopes or bool(set(scopes) & set(key.scopes))


def exercised_scopes(key: ApiKey, needs: Needs) -> tuple[str, ...]:
    """The scopes a permitted operation exercises: the one it needs, or for an operation that
    takes any write scope, the write scopes the key holds."""
    return tuple(scope for scope in needed_scopes(needs) if scope in key.scopes)


def api_key_authorize(key: ApiKey, needs: Needs) -> None:
    """Check that `key` may run an operation that `needs` this; raise ApiFailure 403 if not.
    When it may, the scopes the operation exercises are stamped (at most once a minute each).

    The role is read at the moment of the request, so a demoted holder's keys lose the power
    at once; it costs a query only for the operations that name a role.
    """
    scopes = needed_scopes(needs)
    if key.kind == ApiKey.Kind.MEMBER and not needs.members:
        raise insufficient_scope(
            scopes or ALL_SCOPES,
            "Member keys work only on community endpoints; use a workspace key here.",
        )
    if scopes and not set(scopes) & set(key.scopes):
        raise insufficient_scope(scopes)
    if key.called_with_previous_secret and needs.manages_keys:
        # A roll's or hand-over's old secret is with whoever had it before: it may keep the
        # integration running, never take the key (a roll) or make others (docs/product.md §2).
        raise insufficient_scope(scopes, OLD_SECRET_REFUSED)
    if needs.creates is not None and key.chosen(needs.creates) is not None:
        raise insufficient_scope(
            scopes,
            f"This key is limited to selected {needs.creates}, so it cannot create one; "
            f"that needs a key with access to all {needs.creates}.",
        )
    if needs.roles:
        role = (
            Membership.objects.filter(workspace_id=key.workspace_id, user_id=key.user_id)
            .values_list("role", flat=True)
            .first()
        )
        if role not in needs.roles:
            raise ApiFailure(
                "insufficient-role",
                f"Only a workspace {' or '.join(needs.roles)} may do this, and the key's holder "
                f"is {'no longer in the workspace' if role is None else 'a workspace ' + role}.",
            )
    api_key_note_scope_use(key, exercised_scopes(key, needs), now=timezone.now())
