"""Verifying a presented secret on every request, and the stamps a request leaves: the key's
last use, the scopes it exercised and the chosen objects it reached (each written at most once
a minute, by the usage flush rather than the request: apps/metering/buffer.py). Where idle keys
are revoked, a stamp an hour old or more is written by the request itself, before its answer."""

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone

from apps.audit.services import Actor, audit_record
from apps.metering.buffer import Gathered, add

from . import tokens
from .audit_actions import KEY_FIRST_USED
from .lookup import api_key_with_holder
from .models import ApiKey

logger = logging.getLogger("apps.api_keys")


class KeyRejected(Exception):
    """A presented secret does not authenticate; `reason` is the API's error code, `key_id`
    the key it belongs to when it names one (an expired or revoked key)."""

    def __init__(self, reason: str, key_id: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.key_id = key_id


def api_key_authenticate(raw: str, *, now: datetime | None = None) -> ApiKey:
    """The key a presented secret belongs to, with its workspace and user, in one query.

    Raises KeyRejected("invalid-key") for a malformed, mis-checksummed or unknown secret (the
    first two without touching the database), "revoked-key", "denied-key" or "expired-key" for
    a dead key, "suspended-key" for one whose holder the identity provider suspended,
    "pending-key" for one still waiting for an owner's approval.
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
        key.called_with_previous_secret = True
    elif key.revoked_at is not None and (successor := _successor(secret_hash, now)) is not None:
        key = successor
    # The same rules as ApiKey.state_at, spelled out: this runs on every request, and every
    # door (the API, MCP, OAuth's introspection) authenticates here.
    if key.revoked_at is not None:
        raise KeyRejected("revoked-key", key.pk)
    if key.denied_at is not None:
        raise KeyRejected("denied-key", key.pk)
    if key.expires_at is not None and (now or timezone.now()) >= key.expires_at:
        raise KeyRejected("expired-key", key.pk)
    if key.suspended_at is not None:
        raise KeyRejected("suspended-key", key.pk)
    if key.approval_requested_at is not None and key.approved_at is None:
        raise KeyRejected("pending-key", key.pk)
    if not key.user.is_active:
        raise KeyRejected("invalid-key", key.pk)
    return key


def _successor(secret_hash: str, now: datetime | None) -> ApiKey | None:
    """The key a revoked key was handed over to whose grace still honours the revoked key's
    secret (docs/product.md §12): it acts with that key's rights only, as a rolled secret does.
    Asked only of revoked secrets, never on the path of a working key."""
    successor = api_key_with_holder(secret_hash, previous=True)
    if successor is None or not successor.rolling_at(now or timezone.now()):
        return None
    successor.called_with_previous_secret = True
    return successor


def _note_stamps(key: ApiKey, field: str, names: list[str], now: datetime) -> None:
    """Queue the stamps of `names` that are due (the key's row says when each was last
    written) for the next usage flush; nothing is written here."""
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    current = getattr(key, field) or {}
    due = [
        name
        for name in names
        if (used := current.get(name)) is None or now - datetime.fromisoformat(used) >= interval
    ]
    if due:

        def update(gathered: Gathered) -> None:
            for name in due:
                gathered.stamps[(key.pk, field, name)] = now

        add(update)


def api_key_note_scope_use(key: ApiKey, scopes: tuple[str, ...], *, now: datetime) -> None:
    """Note the scopes a request exercised; written with the next usage flush, at most once a
    minute each."""
    _note_stamps(key, "scope_last_used", list(scopes), now)


def api_key_note_object_use(key: ApiKey, names: list[str], *, now: datetime) -> None:
    """Note the chosen objects a request reached ("communities:12"), as the scopes."""
    _note_stamps(key, "object_last_used", names, now)


def api_key_note_use(
    key: ApiKey, *, ip: str | None | Callable[[], str | None], now: datetime
) -> None:
    """Note the key's use for the next usage flush when its stamp is due (the row read by the
    lookup says when it was last written): the request itself writes nothing."""
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    previous = key.called_with_previous_secret
    stamp_due = key.last_used_at is None or now - key.last_used_at >= interval
    previous_due = previous and (
        key.previous_secret_last_used_at is None
        or now - key.previous_secret_last_used_at >= interval
    )
    if not (stamp_due or previous_due):
        return
    address = ip() if callable(ip) else ip
    if stamp_due and _idleness_watched(key, now) and _record_use_now(key, address, now):
        return

    def update(gathered: Gathered) -> None:
        gathered.last_use[key.pk] = (now, address, previous, key.last_used_at is None)

    add(update)


# A stamp this stale is written by the request itself where idle keys are revoked: the sweep
# runs in another process and cannot see this one's buffer (issue 49).
IDLE_STAMP_WRITTEN_AT_ONCE = timedelta(hours=1)


def _idleness_watched(key: ApiKey, now: datetime) -> bool:
    """Whether the key's workspace revokes idle keys and the key's stamp is old enough for the
    sweep to matter (never used, or not for an hour): once an hour at most, a busy key never."""
    if key.workspace.key_idle_days is None:
        return False
    return key.last_used_at is None or now - key.last_used_at >= IDLE_STAMP_WRITTEN_AT_ONCE


def _record_use_now(key: ApiKey, address: str | None, now: datetime) -> bool:
    """Stamp the use before the answer; False (leave it to the flush) if the database refuses."""
    try:
        api_key_record_use(key, ip=address, now=now)
    except DatabaseError:
        logger.warning("Key %s: its last use could not be written now; the flush will", key.pk)
        if not transaction.get_connection().is_usable():
            transaction.get_connection().close()
        return False
    return True


def _stamp_previous_secret_use(key: ApiKey, now: datetime, interval: timedelta) -> None:
    """While a key rolls, note when its old secret last made a call (once a minute at most)."""
    used = key.previous_secret_last_used_at
    if used is not None and now - used < interval:
        return
    stale = Q(previous_secret_last_used_at__isnull=True) | Q(
        previous_secret_last_used_at__lte=now - interval
    )
    ApiKey.objects.filter(stale, pk=key.pk).update(previous_secret_last_used_at=now)
    key.previous_secret_last_used_at = now


def api_key_record_use(
    key: ApiKey, *, ip: str | None | Callable[[], str | None], now: datetime | None = None
) -> bool:
    """Stamp the key's last use, at most once per interval; True when a row was written.

    The conditional UPDATE lets concurrent requests race harmlessly: at most one of them writes,
    and only that one records the key's first use in the audit log.
    """
    now = now or timezone.now()
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    if key.called_with_previous_secret:
        _stamp_previous_secret_use(key, now, interval)
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
                    action=KEY_FIRST_USED,
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
