"""Bearer authentication and authorization, the same for every door (HTTP API and MCP)."""

from django.http import HttpRequest
from django.utils import timezone

from apps.api.errors import ApiFailure, insufficient_scope
from apps.api.operations import Needs
from apps.api.ratelimit import rate_limit_hit
from apps.common.http import client_ip
from apps.workspaces.models import Membership

from .models import ApiKey
from .scopes import ALL_SCOPES, WRITE_SCOPES
from .services import KeyRejected, api_key_authenticate, api_key_record_use


def bearer_credential(request: HttpRequest) -> str | None:
    """The credential of an `Authorization: Bearer <credential>` header, or None.

    The scheme name is case-insensitive; another scheme or an empty credential counts as none.
    """
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credential.strip() or None


def api_key_from_request(request: HttpRequest) -> ApiKey:
    """The active key the request carries, counted against its rate limit and stamped as used.

    Raises ApiFailure with the 401 or 429 of the error table.
    """
    credential = bearer_credential(request)
    if credential is None:
        raise ApiFailure("missing-key")
    now = timezone.now()
    try:
        key = api_key_authenticate(credential, now=now)
    except KeyRejected as rejected:
        raise ApiFailure(rejected.reason) from None
    retry_after = rate_limit_hit(key.pk)
    if retry_after is not None:
        raise ApiFailure(
            "rate-limited",
            f"Too many requests with this key; try again in {retry_after} seconds.",
            Retry_After=str(retry_after),
        )
    api_key_record_use(key, ip=lambda: client_ip(request), now=now)
    return key


def needed_scopes(needs: Needs) -> tuple[str, ...]:
    """The scopes of which a key must hold at least one (empty: any key will do)."""
    if needs.any_write:
        return WRITE_SCOPES
    return (needs.scope,) if needs.scope else ()


def key_may(key: ApiKey, needs: Needs) -> bool:
    """Whether the key's kind and scopes allow the operation (roles are checked on the call)."""
    if key.kind == ApiKey.Kind.MEMBER and not needs.members:
        return False
    scopes = needed_scopes(needs)
    return not scopes or bool(set(scopes) & set(key.scopes))


def api_key_authorize(key: ApiKey, needs: Needs) -> None:
    """Check that `key` may run an operation that `needs` this; raise ApiFailure 403 if not.

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
    if needs.role is not None:
        role = (
            Membership.objects.filter(workspace_id=key.workspace_id, user_id=key.user_id)
            .values_list("role", flat=True)
            .first()
        )
        if role != needs.role:
            raise ApiFailure(
                "insufficient-role",
                f"Only a workspace {needs.role} may do this, and the key's holder is "
                f"{'no longer in the workspace' if role is None else 'a workspace ' + role}.",
            )
