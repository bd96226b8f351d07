"""What the pages show of a key warned for idleness (docs/product.md §13): from the warning on,
"Idle N days, revoked on <day> unless used" in the key list and on the key's page, and the
list's filter for such keys. A warning counts while the key is active, its workspace's policy
still has `idleDays`, and the key has not been used since (the warning names the idle spell)."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.api_keys.models import ApiKey, ApiKeyState

from .models import IdleWarning
from .sweep import WARNING_AHEAD, idle_since


@dataclass(frozen=True)
class IdleNotice:
    """A warned key: idle `days` whole days, revoked on `revoked_on` unless used before."""

    days: int
    revoked_on: datetime


def _revoked_on(key: ApiKey, warning: IdleWarning) -> datetime:
    """The day the warning named: the policy's day, never sooner than 7 days after it."""
    days = key.workspace.key_idle_days or 0
    return max(warning.idle_since + timedelta(days=days), warning.sent_at + WARNING_AHEAD)


def idle_notices(keys: Iterable[ApiKey], now: datetime | None = None) -> dict[int, IdleNotice]:
    """The notices of `keys` that were warned for their current idle spell (one query)."""
    now = now or timezone.now()
    candidates = {
        key.pk: key
        for key in keys
        if key.state == ApiKeyState.ACTIVE and key.workspace.key_idle_days is not None
    }
    if not candidates:
        return {}
    notices = {}
    for warning in IdleWarning.objects.filter(key_id__in=list(candidates)):
        key = candidates[warning.key_id]
        if warning.idle_since == idle_since(key):
            since = idle_since(key)
            notices[key.pk] = IdleNotice((now - since).days, _revoked_on(key, warning))
    return notices


def attach_idle_notices(keys: Iterable[Any]) -> None:
    """Give each key its `idle_notice` (None when not warned), for pages."""
    keys = list(keys)
    notices = idle_notices(keys)
    for key in keys:
        key.idle_notice = notices.get(key.pk)


def warned_condition() -> Q:
    """Keys warned for their current idle spell, in a workspace whose policy still revokes idle
    keys (the caller asks for active keys)."""
    spell = IdleWarning.objects.filter(
        key=OuterRef("pk"), idle_since=Coalesce(OuterRef("last_used_at"), OuterRef("created_at"))
    )
    return Q(Exists(spell), workspace__key_idle_days__isnull=False)
