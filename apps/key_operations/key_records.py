"""The API keys group's records and inputs: a key as JSON, opaque page cursors, and the expiry a
create body asks for (docs/product.md §3.6)."""

import base64
import binascii
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from apps.api.http import iso_time
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import DEFAULT_LIFETIME, EXPIRY_DAY_CHOICES
from apps.api_keys.services import CreatedApiKey
from apps.common.validation import InvalidInput, parse_moment


def key_to_json(key: ApiKey) -> dict[str, Any]:
    """A key's API record: metadata only, never a secret or its hash."""
    return {
        "id": key.pk,
        "name": key.name,
        "description": key.description,
        "hint": key.hint,
        "kind": key.kind,
        "tag": key.tag or None,
        "holderEmail": key.user.email,
        "scopes": sorted(key.scopes),
        "restrictions": key.restrictions.as_json(),
        "createdAt": iso_time(key.created_at),
        "expiresAt": iso_time(key.expires_at) if key.expires_at else None,
        "lastUsedAt": iso_time(key.last_used_at) if key.last_used_at else None,
        "lastUsedIp": key.last_used_ip,
        "previousSecretWorksUntil": _previous_secret_until(key),
        "state": key.state,
        "approval": approval_to_json(key),
        "quota": key.quota.as_json() if key.quota else None,
        "quotaShared": key.quota_shared,  # its service account's one allowance
        "serviceAccount": service_account_of(key),
    }


def _previous_secret_until(key: ApiKey) -> str | None:
    until = key.previous_secret_expires_at
    return iso_time(until) if until and until > timezone.now() else None


def service_account_of(key: ApiKey) -> dict[str, Any] | None:
    """The service account holding `key` (docs/product.md §12), or None for a person's key."""
    if not key.user.is_service_account:
        return None
    account = key.user.service_account
    return {"id": account.pk, "name": account.name}


def approval_to_json(key: ApiKey) -> dict[str, Any] | None:
    """A key's approval: when it was asked for and what was decided, by whom."""
    if key.approval_requested_at is None:
        return None
    decided_at = key.approved_at or key.denied_at
    decider = key.approved_by if key.approved_at else key.denied_by
    return {
        "requestedAt": iso_time(key.approval_requested_at),
        "decision": "approved" if key.approved_at else ("denied" if key.denied_at else None),
        "decidedAt": iso_time(decided_at) if decided_at else None,
        "decidedBy": decider.email if decider is not None else None,
        "reason": key.denial_reason,
    }


def with_secret(created: CreatedApiKey) -> dict[str, Any]:
    return {**key_to_json(created.key), "secret": created.secret}


def encode_cursor(key_id: int) -> str:
    return base64.urlsafe_b64encode(f"before:{key_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    prefix, _, number = text.partition(":")
    if prefix != "before" or not number.isascii() or not number.isdigit():
        raise InvalidInput("cursor", "cursor must be the `next` value of an earlier page.")
    return int(number)


def expiry_of(data: dict[str, Any], caller: ApiKey, now: datetime) -> datetime | None:
    """The new key's expiry from one of expiresInDays, expiresAt, noExpiry; none given: the
    default lifetime, or the calling key's own end when that comes sooner."""
    given = [name for name in ("expiresInDays", "expiresAt", "noExpiry") if name in data]
    if len(given) > 1:
        raise InvalidInput(given[1], f"Give only one of {', '.join(given)}.")
    if not given:
        default = now + DEFAULT_LIFETIME
        caller_end = caller.expires_at
        return min(default, caller_end) if caller_end else default
    if given[0] == "noExpiry":
        if data["noExpiry"] is not True:
            raise InvalidInput("noExpiry", "noExpiry must be true when given.")
        return None
    if given[0] == "expiresInDays":
        days = data["expiresInDays"]
        if isinstance(days, bool) or days not in EXPIRY_DAY_CHOICES:
            choices = ", ".join(map(str, EXPIRY_DAY_CHOICES))
            raise InvalidInput("expiresInDays", f"expiresInDays must be one of {choices}.")
        return now + timedelta(days=days)
    return parse_moment(data["expiresAt"], "expiresAt")
