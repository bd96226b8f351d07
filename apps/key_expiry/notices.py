"""Expiry notices: e-mails and `key.expiring` events 7 days and 1 day before a key expires,
and the `key.expired` event when it has; each once. The scheduled job `expiry-notices` runs it
hourly on the task queue; the e-mails go out through the queue too."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.api_keys.links import key_links
from apps.api_keys.models import ApiKey, ApiKeyState
from apps.common.dates import moment_text
from apps.common.tasks import send_email
from apps.webhooks.events import key_data, webhook_emit

from .models import ExpiryNotice

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
            .exclude(tag=ApiKey.Tag.MCP)  # a connected app's hour: renewed, not announced
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
                with transaction.atomic():  # the claim, its e-mail and its event together
                    ExpiryNotice.objects.create(key=key, kind=kind, sent_at=now)
                    _mail_expiry_notice(key, now)
                    webhook_emit(
                        key.workspace,
                        "key.expiring",
                        {"key": key_data(key), "notice": kind.label},
                        at=now,
                    )
            except IntegrityError:
                continue  # another run claimed it
            sent += 1
    return sent


EXPIRED_EVENTS_LOOK_BACK = timedelta(days=7)


def api_key_announce_expired(*, now: datetime | None = None) -> int:
    """Send `key.expired` once for each key that expired in the last 7 days (a key expired
    before that, revoked or denied, gets none); return how many."""
    now = now or timezone.now()
    expired = (
        ApiKey.objects.filter(
            expires_at__lte=now,
            expires_at__gt=now - EXPIRED_EVENTS_LOOK_BACK,
            revoked_at__isnull=True,
            denied_at__isnull=True,  # a denied key never worked: nothing expired
        )
        .exclude(tag=ApiKey.Tag.MCP)
        .exclude(expiry_notices__kind=ExpiryNotice.Kind.EXPIRED)
        .select_related("user", "workspace")
    )
    announced = 0
    for key in expired:
        try:
            with transaction.atomic():
                ExpiryNotice.objects.create(key=key, kind=ExpiryNotice.Kind.EXPIRED, sent_at=now)
                webhook_emit(key.workspace, "key.expired", {"key": key_data(key)}, at=now)
        except IntegrityError:
            continue
        announced += 1
    return announced


def _mail_expiry_notice(key: ApiKey, now: datetime) -> None:
    assert key.expires_at is not None  # only keys that expire get notices
    left = key.expires_at - now
    when = f"in {left.days} days" if left >= timedelta(days=2) else "within a day"
    stops = moment_text(key.expires_at, ZoneInfo(key.workspace.timezone))
    links = key_links(key, settings.SITE_URL)
    send_email.enqueue(
        f"Your API key “{key.name}” expires {when}",
        f"The API key “{key.name}” ({key.hint}) in {key.workspace.name} expires on "
        f"{stops}, {when}; it stops working at that "
        "moment.\n\n"
        "Re-create it with the same name, description and permissions, then move your "
        f"integration to the new key:\n{links['recreate']}\n\n"
        f"The key, its last use and its history:\n{links['page']}\n",
        [key.user.email],
    )


def api_key_expiry_job() -> str:
    """The hourly job: notices of keys about to expire, events of keys that did."""
    sent, announced = api_key_send_expiry_notices(), api_key_announce_expired()
    return f"{sent} notices, {announced} expired"
