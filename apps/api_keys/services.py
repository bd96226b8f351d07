"""Creating, verifying and revoking API keys: the functions views, commands and tests share."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import ALL_SCOPES, MEMBER_SCOPES
from apps.audit.models import Action
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput, clean_long_text, clean_text
from apps.workspaces.models import Workspace

from . import tokens
from .lookup import api_key_with_holder
from .models import ApiKey, ApiKeyState, ExpiryNotice

DEFAULT_LIFETIME = timedelta(days=365)
MAX_LIFETIME = timedelta(days=365)
CLI_LIFETIME = timedelta(days=90)
EXPIRY_DAY_CHOICES = (7, 30, 60, 90, 180, 365)


class KeyRejected(Exception):
    """A presented secret does not authenticate; `reason` is the API's error code, `key_id`
    the key it belongs to when it names one (an expired or revoked key)."""

    def __init__(self, reason: str, key_id: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.key_id = key_id


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


def key_policy_problem(
    workspace: Workspace, expires_at: datetime | None, *, now: datetime, created_at=None
) -> str | None:
    """Why a key with this expiry is outside the workspace's key policy, or None.

    `created_at` (default `now`) is when the key's lifetime starts; a day of slack lets a
    custom date mean the end of that day.
    """
    start = created_at or now
    longest = workspace.key_max_lifetime_days
    if expires_at is None:
        if not workspace.key_allow_no_expiry:
            return (
                "This workspace's key policy requires an expiry: "
                f"choose one of at most {longest} days."
            )
        return None
    if expires_at > start + timedelta(days=longest + 1):
        return f"This workspace's key policy allows keys of at most {longest} days."
    return None


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


DESCRIPTION_MAX_LENGTH = 500


def clean_description(value: Any) -> str:
    """A key's optional description: up to 500 characters, newlines allowed."""
    return clean_long_text(
        value or "", "description", max_length=DESCRIPTION_MAX_LENGTH, required=False
    )


def api_key_create(
    *,
    workspace: Workspace,
    user: User,
    name: str,
    scopes: Any,
    expires_at: datetime | None,
    kind: str = ApiKey.Kind.WORKSPACE,
    tag: str = ApiKey.Tag.NONE,
    actor: Actor | None = None,
    description: str = "",
    installation_id: str | None = None,
) -> CreatedApiKey:
    """Create a key for `user` in `workspace` and return it with its secret.

    `expires_at=None` means no expiry. A CLI-tagged key always lives exactly 90 days, so
    `expires_at` must be None for it; `installation_id` names the CLI installation that logged
    in (one live key each, which the database enforces). Raises InvalidInput for a bad name,
    scopes or expiry. The audit event names `actor` (the user themself when not given), never
    the secret.
    """
    now = timezone.now()
    name = clean_text(name, "name", max_length=100)
    description = clean_description(description)
    scopes = clean_scopes(scopes, kind=kind)
    if tag == ApiKey.Tag.CLI:
        if expires_at is not None:
            raise InvalidInput("expires_at", "CLI keys always expire after 90 days.")
        expires_at = now + CLI_LIFETIME
    expires_at = clean_expires_at(expires_at, now=now)
    policy_problem = key_policy_problem(workspace, expires_at, now=now)
    if policy_problem:
        raise InvalidInput("expires_at", policy_problem)
    secret = tokens.generate_secret(kind)
    with transaction.atomic():
        key = ApiKey.objects.create(
            workspace=workspace,
            user=user,
            kind=kind,
            name=name,
            description=description,
            scopes=scopes,
            secret_hash=tokens.hash_secret(secret),
            hint=tokens.hint_for(secret),
            tag=tag,
            created_at=now,
            expires_at=expires_at,
            installation_id=installation_id,
        )
        audit_record(
            workspace=workspace,
            action=Action.MEMBER_KEY_CREATED if kind == ApiKey.Kind.MEMBER else Action.KEY_CREATED,
            actor=actor or Actor.of_user(user),
            key=key,
            subject=f"{key.name} ({key.hint})",
            data={
                "scopes": scopes,
                "expiresAt": expires_at.isoformat() if expires_at else None,
                "tag": tag,
            },
        )
    return CreatedApiKey(key=key, secret=secret)


def api_key_authenticate(raw: str, *, now: datetime | None = None) -> ApiKey:
    """The key a presented secret belongs to, with its workspace and user, in one query.

    Raises KeyRejected("invalid-key") for a malformed, mis-checksummed or unknown secret (the
    first two without touching the database), "revoked-key" or "expired-key" for a dead key.
    """
    if tokens.kind_of(raw) is None:
        raise KeyRejected("invalid-key")
    secret_hash = tokens.hash_secret(raw)
    key = api_key_with_holder(secret_hash)
    if key is None:
        # A secret replaced by a roll works until its grace period ends, then like an expiry.
        key = api_key_with_holder(secret_hash, previous=True)
        if key is None:
            raise KeyRejected("invalid-key")
        if not key.rolling_at(now or timezone.now()):
            raise KeyRejected("expired-key", key.pk)
    # The same rules as ApiKey.state_at, spelled out: this runs on every request.
    if key.revoked_at is not None:
        raise KeyRejected("revoked-key", key.pk)
    if key.expires_at is not None and (now or timezone.now()) >= key.expires_at:
        raise KeyRejected("expired-key", key.pk)
    if not key.user.is_active:
        raise KeyRejected("invalid-key", key.pk)
    return key


# The grace periods offered for a roll: how long the replaced secret keeps working.
ROLL_GRACE_PERIODS: dict[str, timedelta] = {
    "none": timedelta(0),
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}


def api_key_roll(*, key: ApiKey, grace: timedelta, actor: Actor) -> CreatedApiKey:
    """Give an active key a new secret, keeping its identity (name, scopes, expiry, history).

    The replaced secret keeps working for `grace` and then stops at that instant, as an expiry
    would; with no grace it stops at once. A secret still in the grace of an earlier roll stops
    now: only the last replaced secret is honoured. Raises InvalidInput for an inactive key and
    PermissionDenied unless `actor` is the key's holder: nobody else ever receives its secret.
    """
    if grace not in ROLL_GRACE_PERIODS.values():
        raise InvalidInput("grace", "Choose a grace period of none, 1 hour, 24 hours or 7 days.")
    now = timezone.now()
    secret = tokens.generate_secret("member" if key.kind == ApiKey.Kind.MEMBER else "workspace")
    with transaction.atomic():
        locked = (
            ApiKey.objects.select_for_update().select_related("workspace", "user").get(pk=key.pk)
        )
        if actor.user is None or actor.user.pk != locked.user_id:
            # A roll hands out a secret that acts as the key's holder: an owner or admin who
            # could roll a teammate's key would take that person's powers (PRODUCT.md §2).
            raise PermissionDenied("Only the key's own holder can roll it; you can revoke it.")
        if locked.state_at(now) != ApiKeyState.ACTIVE:
            raise InvalidInput(
                "key", f"Only an active key can be rolled; this one is {locked.state_at(now)}."
            )
        previous_hint = locked.hint
        locked.previous_secret_hash = locked.secret_hash if grace else None
        locked.previous_secret_expires_at = now + grace if grace else None
        locked.secret_hash = tokens.hash_secret(secret)
        locked.hint = tokens.hint_for(secret)
        locked.rolled_at = now
        locked.save(
            update_fields=[
                "previous_secret_hash",
                "previous_secret_expires_at",
                "secret_hash",
                "hint",
                "rolled_at",
            ]
        )
        audit_record(
            workspace=locked.workspace,
            action=Action.KEY_ROLLED,
            actor=actor,
            key=locked,
            subject=f"{locked.name} ({locked.hint})",
            data={
                "previousHint": previous_hint,
                "oldSecretStopsAt": (now + grace).isoformat(),
            },
        )
    return CreatedApiKey(key=locked, secret=secret)


def api_key_update_details(*, key: ApiKey, name: Any, description: Any, actor: Actor) -> ApiKey:
    """Rename a key or change its description; each changed field is audited before → after."""
    name = clean_text(name, "name", max_length=100)
    description = clean_description(description)
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().select_related("workspace").get(pk=key.pk)
        changes = {
            field: (getattr(locked, field), value)
            for field, value in (("name", name), ("description", description))
            if getattr(locked, field) != value
        }
        if changes:
            for field, (_, after) in changes.items():
                setattr(locked, field, after)
            locked.save(update_fields=list(changes))
            for field, (before, after) in changes.items():
                audit_record(
                    workspace=locked.workspace,
                    action=Action.KEY_UPDATED,
                    actor=actor,
                    key=locked,
                    subject=f"{locked.name} ({locked.hint})",
                    data={"field": field, "before": before, "after": after},
                )
    return locked


def api_key_narrow(*, key: ApiKey, scopes: Any, actor: Actor) -> ApiKey:
    """Take scopes away from a key (never add any); audited with the scopes before and after."""
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().select_related("workspace").get(pk=key.pk)
        kept = clean_scopes(scopes, kind=locked.kind)
        added = set(kept) - set(locked.scopes)
        if added:
            raise InvalidInput(
                "scopes",
                f"A key can only be narrowed here; {', '.join(sorted(added))} would widen it. "
                "Create a new key for more permissions.",
            )
        if locked.state_at(timezone.now()) != ApiKeyState.ACTIVE:
            raise InvalidInput("key", "Only an active key can be narrowed.")
        if set(kept) != set(locked.scopes):
            before = list(locked.scopes)
            locked.scopes = kept
            locked.save(update_fields=["scopes"])
            audit_record(
                workspace=locked.workspace,
                action=Action.KEY_NARROWED,
                actor=actor,
                key=locked,
                subject=f"{locked.name} ({locked.hint})",
                data={"before": before, "after": kept},
            )
    return locked


def api_key_record_scope_use(key: ApiKey, scopes: tuple[str, ...], *, now: datetime) -> bool:
    """Stamp the scopes a request exercised, each at most once a minute; True when written.

    Like the last-use stamp, the hot path only reads: the stamps come with the key's row, and a
    write happens only for a scope whose stamp is a minute old or more.
    """
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    due = [
        scope
        for scope in scopes
        if (used := key.scope_used_at(scope)) is None or now - used >= interval
    ]
    if not due:
        return False
    with transaction.atomic():
        stamps = (
            ApiKey.objects.select_for_update()
            .values_list("scope_last_used", flat=True)
            .get(pk=key.pk)
        ) or {}
        for scope in due:
            stamps[scope] = max(stamps.get(scope, ""), now.isoformat())
        ApiKey.objects.filter(pk=key.pk).update(scope_last_used=stamps)
    key.scope_last_used = stamps
    return True


def api_key_find_by_secret(raw: str, *, now: datetime | None = None) -> ApiKey | None:
    """The key a secret belongs to whatever its state, or None (leak reports, operators, RFC 7009).

    A secret replaced by a roll is still the key while its grace lasts: it works, so a leak of
    it or a revocation naming it must reach the key. Past its grace it names nothing.
    """
    if tokens.kind_of(raw) is None:
        return None
    secret_hash = tokens.hash_secret(raw)
    keys = ApiKey.objects.select_related("workspace", "user")
    key = keys.filter(secret_hash=secret_hash).first()
    if key is None:
        key = keys.filter(previous_secret_hash=secret_hash).first()
        if key is not None and not key.rolling_at(now or timezone.now()):
            return None
    return key


def api_key_record_use(
    key: ApiKey, *, ip: str | None | Callable[[], str | None], now: datetime | None = None
) -> bool:
    """Stamp the key's last use, at most once per interval; True when a row was written.

    The conditional UPDATE lets concurrent requests race harmlessly: at most one of them writes,
    and only that one records the key's first use in the audit log.
    """
    now = now or timezone.now()
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    if key.last_used_at is not None and now - key.last_used_at < interval:
        return False
    if callable(ip):  # worked out only when a write is due
        ip = ip()
    stale = Q(last_used_at__lte=now - interval)
    if key.last_used_at is not None:
        written = ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now, last_used_ip=ip)
    else:
        with transaction.atomic():
            first_use = ApiKey.objects.filter(pk=key.pk, last_used_at__isnull=True).update(
                last_used_at=now, last_used_ip=ip
            )
            if first_use:
                audit_record(
                    workspace=key.workspace,
                    action=Action.KEY_FIRST_USED,
                    actor=Actor.of_key(key, ip),
                    key=key,
                    subject=f"{key.name} ({key.hint})",
                )
        written = first_use or ApiKey.objects.filter(stale, pk=key.pk).update(
            last_used_at=now, last_used_ip=ip
        )
    if written:
        key.last_used_at, key.last_used_ip = now, ip
    return bool(written)


def api_key_revoke(*, key: ApiKey, actor: Actor) -> ApiKey:
    """Revoke a key for good; it fails on the very next request. Revoking twice changes nothing.

    Only revoked_at and revoked_by are written: a full save() could write back stale fields.
    """
    now = timezone.now()
    with transaction.atomic():
        revoked = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
            revoked_at=now, revoked_by=actor.user
        )
        key.refresh_from_db(fields=["revoked_at", "revoked_by"])
        if revoked:
            member = key.kind == ApiKey.Kind.MEMBER
            audit_record(
                workspace=key.workspace,
                action=Action.MEMBER_KEY_REVOKED if member else Action.KEY_REVOKED,
                actor=actor,
                key=key,
                subject=f"{key.name} ({key.hint})",
            )
    return key


NOTICE_WINDOWS = (
    (ExpiryNotice.Kind.DAY, timedelta(days=1)),
    (ExpiryNotice.Kind.WEEK, timedelta(days=7)),
)


def api_key_send_expiry_notices(*, now: datetime | None = None) -> int:
    """E-mail owners of keys expiring within 7 days and within 1 day, once each; return how
    many notices went out. Safe to run as often as you like: a unique (key, kind) row is
    claimed before the mail is sent, so a second run, even a concurrent one, sends nothing.
    A key first seen inside the 1-day window gets only the 1-day notice."""
    now = now or timezone.now()
    sent = 0
    for kind, window in NOTICE_WINDOWS:
        due = (
            ApiKey.objects.in_state(ApiKeyState.ACTIVE, now)
            .filter(expires_at__lte=now + window)
            .exclude(expiry_notices__kind=kind)
            .select_related("user", "workspace")
        )
        for key in due:
            if (
                kind == ExpiryNotice.Kind.WEEK
                and key.expiry_notices.filter(kind=ExpiryNotice.Kind.DAY).exists()
            ):
                continue
            try:
                with transaction.atomic():
                    ExpiryNotice.objects.create(key=key, kind=kind, sent_at=now)
            except IntegrityError:
                continue  # another run claimed it
            _mail_expiry_notice(key, now)
            sent += 1
    return sent


def key_links(key: ApiKey, base_url: str) -> dict[str, str]:
    """Where a key's page and its "re-create" form (prefilled from it) are, for e-mails."""
    member = key.kind == ApiKey.Kind.MEMBER
    page = "portal:key_detail" if member else "api_keys:detail"
    create = "portal:key_create" if member else "api_keys:create"
    return {
        "page": base_url + reverse(page, args=[key.pk]),
        "recreate": base_url + reverse(create) + f"?from={key.pk}",
    }


def _mail_expiry_notice(key: ApiKey, now: datetime) -> None:
    left = key.expires_at - now
    when = f"in {left.days} days" if left >= timedelta(days=2) else "within a day"
    zone = ZoneInfo(key.workspace.timezone)
    stops = key.expires_at.astimezone(zone)
    links = key_links(key, settings.SITE_URL)
    send_mail(
        f"Your API key “{key.name}” expires {when}",
        f"The API key “{key.name}” ({key.hint}) in {key.workspace.name} expires on "
        f"{stops:%Y-%m-%d %H:%M} ({key.workspace.timezone}), {when}; it stops working at that "
        "moment.\n\n"
        "Re-create it with the same name, description and permissions, then move your "
        f"integration to the new key:\n{links['recreate']}\n\n"
        f"The key, its last use and its history:\n{links['page']}\n",
        None,
        [key.user.email],
    )
