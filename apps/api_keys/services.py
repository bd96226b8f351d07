"""Creating, verifying and revoking API keys: the functions views, commands and tests share."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import User
from apps.common.validation import InvalidInput, clean_text
from apps.workspaces.models import Workspace

from . import tokens
from .models import ApiKey, ApiKeyState
from .scopes import ALL_SCOPES, MEMBER_SCOPES

DEFAULT_LIFETIME = timedelta(days=365)
MAX_LIFETIME = timedelta(days=365)
CLI_LIFETIME = timedelta(days=90)
EXPIRY_DAY_CHOICES = (7, 30, 60, 90, 180, 365)


class KeyRejected(Exception):
    """A presented secret does not authenticate; `reason` is the API's error code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class CreatedApiKey:
    """A freshly created key with its plaintext secret: the only place the secret ever exists."""

    key: ApiKey
    secret: str


def clean_scopes(value: Any, *, kind: str = ApiKey.Kind.WORKSPACE, field: str = "scopes") -> list:
    """A non-empty set of known scopes, sorted; member keys may hold community scopes only."""
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(
        isinstance(s, str) for s in value
    ):
        raise InvalidInput(field, "Scopes must be a list of scope names.")
    allowed = MEMBER_SCOPES if kind == ApiKey.Kind.MEMBER else ALL_SCOPES
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise InvalidInput(
            field,
            f"Unknown or not allowed scope {unknown[0]!r}; choose from {', '.join(allowed)}.",
        )
    if not value:
        raise InvalidInput(field, "Choose at least one permission.")
    return sorted(set(value))


def clean_expires_at(value: datetime | None, *, now: datetime, field: str = "expires_at"):
    """An expiry in the future and no more than 365 days ahead, or None for no expiry."""
    if value is None:
        return None
    if timezone.is_naive(value):
        raise InvalidInput(field, "The expiry must carry a time zone.")
    if value <= now:
        raise InvalidInput(field, "The expiry must be in the future.")
    # One day of slack lets a "date 365 days from today" mean the end of that day.
    if value > now + MAX_LIFETIME + timedelta(days=1):
        raise InvalidInput(field, "The expiry can be at most 365 days ahead.")
    return value


def expiry_in_days(days: int, *, now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + timedelta(days=days)


def api_key_create(
    *,
    workspace: Workspace,
    user: User,
    name: str,
    scopes: Any,
    expires_at: datetime | None,
    kind: str = ApiKey.Kind.WORKSPACE,
    tag: str = ApiKey.Tag.NONE,
) -> CreatedApiKey:
    """Create a key for `user` in `workspace` and return it with its secret.

    `expires_at=None` means no expiry. A CLI-tagged key always lives exactly 90 days, so
    `expires_at` must be None for it. Raises InvalidInput for a bad name, scopes or expiry.
    """
    now = timezone.now()
    name = clean_text(name, "name", max_length=100)
    scopes = clean_scopes(scopes, kind=kind)
    if tag == ApiKey.Tag.CLI:
        if expires_at is not None:
            raise InvalidInput("expires_at", "CLI keys always expire after 90 days.")
        expires_at = now + CLI_LIFETIME
    expires_at = clean_expires_at(expires_at, now=now)
    secret = tokens.generate_secret(kind)
    with transaction.atomic():
        key = ApiKey.objects.create(
            workspace=workspace,
            user=user,
            kind=kind,
            name=name,
            scopes=scopes,
            secret_hash=tokens.hash_secret(secret),
            hint=tokens.hint_for(secret),
            tag=tag,
            created_at=now,
            expires_at=expires_at,
        )
    return CreatedApiKey(key=key, secret=secret)


def api_key_authenticate(raw: str, *, now: datetime | None = None) -> ApiKey:
    """The key a presented secret belongs to, with its workspace and user, in one query.

    Raises KeyRejected("invalid-key") for a malformed, mis-checksummed or unknown secret (the
    first two without touching the database), "revoked-key" or "expired-key" for a dead key.
    """
    if tokens.kind_of(raw) is None:
        raise KeyRejected("invalid-key")
    try:
        key = ApiKey.objects.select_related("workspace", "user").get(
            secret_hash=tokens.hash_secret(raw)
        )
    except ApiKey.DoesNotExist:
        raise KeyRejected("invalid-key") from None
    state = key.state_at(now or timezone.now())
    if state == ApiKeyState.REVOKED:
        raise KeyRejected("revoked-key")
    if state == ApiKeyState.EXPIRED:
        raise KeyRejected("expired-key")
    if not key.user.is_active:
        raise KeyRejected("invalid-key")
    return key


def api_key_find_by_secret(raw: str) -> ApiKey | None:
    """The key a secret belongs to whatever its state, or None (for operators and tooling)."""
    if tokens.kind_of(raw) is None:
        return None
    return ApiKey.objects.filter(secret_hash=tokens.hash_secret(raw)).first()


def api_key_record_use(key: ApiKey, *, ip: str | None, now: datetime | None = None) -> bool:
    """Stamp the key's last use, at most once per interval; True when a row was written.

    The conditional UPDATE lets concurrent requests race harmlessly: at most one of them writes.
    """
    now = now or timezone.now()
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    if key.last_used_at is not None and now - key.last_used_at < interval:
        return False
    written = (
        ApiKey.objects.filter(pk=key.pk)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - interval))
        .update(last_used_at=now, last_used_ip=ip)
    )
    if written:
        key.last_used_at, key.last_used_ip = now, ip
    return bool(written)


def api_key_revoke(*, key: ApiKey, actor: User | None) -> ApiKey:
    """Revoke a key for good; it fails on the very next request. Revoking twice changes nothing.

    Only revoked_at and revoked_by are written: a full save() could write back stale fields.
    """
    now = timezone.now()
    with transaction.atomic():
        ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
            revoked_at=now, revoked_by=actor
        )
        key.refresh_from_db(fields=["revoked_at", "revoked_by"])
    return key
