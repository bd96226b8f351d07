"""Telling of a quota at 80 % and at 100 % (docs/product.md §17), once each per period: an
e-mail to the key's holder (the owners, for a service account's key), and the audit events
`key.quota_warning` and `key.quota_exhausted`, which the webhooks and the audit streams carry.
Heard from the quota's counting (apps/quotas/counting.py), never on a request's path with
Redis: the counts copied after each usage flush are what is looked at."""

from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.api_keys.links import key_links
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor, audit_record
from apps.common.dates import moment_text
from apps.common.tasks import send_email
from apps.quotas.counting import holder_of
from apps.quotas.models import QuotaCounter
from apps.quotas.uses import QuotaUse
from apps.workspaces.models import holder_emails

from .audit_actions import KEY_QUOTA_EXHAUSTED, KEY_QUOTA_WARNING

COUNTING = Actor.of_operator("quota counting")
WARNING_PERCENT = 80


def quota_level(used: int, allowance: int) -> int | None:
    """100 for a spent allowance, 80 from 80 % on, else None."""
    if used >= allowance:
        return 100
    return WARNING_PERCENT if used * 100 >= allowance * WARNING_PERCENT else None


def quota_thresholds_heard(counts: list[tuple[str, datetime, int]]) -> int:
    """Tell of each key's quota whose net use (scope, period start, used) reached 80 % or
    100 % of its period for the first time; how many were told."""
    key_ids = {int(scope[1:]) for scope, _, _ in counts if scope.startswith("k")}
    if not key_ids:
        return 0
    keys = {
        key.pk: key
        for key in ApiKey.objects.filter(
            pk__in=key_ids, quota_requests__isnull=False
        ).select_related("user", "workspace")
    }
    told = 0
    for scope, start, used in counts:
        key = keys.get(int(scope[1:])) if scope.startswith("k") else None
        holder = holder_of(key.pk, key.quota, key.created_at) if key else None
        if key is None or holder is None:
            continue
        period = holder.period(timezone.now())
        level = quota_level(used, holder.quota.requests)
        if period.start != start or level is None:
            continue  # a count of an earlier period, or below 80 %
        told += _tell(key, QuotaUse(holder.quota, used, period), level)
    return told


def _tell(key: ApiKey, use: QuotaUse, level: int) -> int:
    """Claim the level for the period (one run tells it, however many hear it), record it and
    queue the e-mail; 1 when told, 0 when told already."""
    told_already = ("100",) if level == 100 else ("80", "100")
    with transaction.atomic():
        claimed = (
            QuotaCounter.objects.filter(scope=f"k{key.pk}", period_start=use.period.start)
            .exclude(warned__in=told_already)
            .update(warned=str(level))
        )
        if not claimed:
            return 0
        audit_record(
            workspace=key.workspace,
            action=KEY_QUOTA_EXHAUSTED if level == 100 else KEY_QUOTA_WARNING,
            actor=COUNTING,
            key=key,
            subject=f"{key.name} ({key.hint})",
            data={**use.as_json(), "percent": use.percent},
        )
    _mail(key, use, level)
    return 1


def _mail(key: ApiKey, use: QuotaUse, level: int) -> None:
    zone = ZoneInfo(key.workspace.timezone)
    refill = (
        f"It refills to {use.quota.requests:,} on {moment_text(use.period.end, zone)}."
        if use.period.end
        else "It is a one-off allowance: it does not refill, an owner can top it up."
    )
    if level == 100:
        subject = f"Your API key “{key.name}” has used its whole quota"
        state = "has used its whole quota: it is refused with 429 quota-exceeded until then"
    else:
        subject = f"Your API key “{key.name}” has used {use.percent} % of its quota"
        state = f"has used {use.shown_used:,} of its {use.quota} ({use.percent} %)"
    body = (
        f"The API key “{key.name}” ({key.hint}) in {key.workspace.name} {state}. {refill}\n\n"
        f"The key, its use and its history:\n{key_links(key, settings.SITE_URL)['page']}\n"
    )
    if recipients := holder_emails(key.user, key.workspace):
        send_email.enqueue(subject, body, recipients)
