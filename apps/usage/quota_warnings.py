"""Telling of a quota at 80 % and at 100 % (docs/product.md §17), once each per period: an
e-mail to the key's holder (the owners, for a service account's key), and the audit events
`key.quota_warning` and `key.quota_exhausted`, which the webhooks and the audit streams carry.
Heard from the quota's counting (apps/quotas/counting.py), never on a request's path with
Redis: the counts copied after each usage flush are what is looked at."""

from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from apps.api_keys.links import key_links
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor, audit_record
from apps.common.dates import moment_text
from apps.common.tasks import send_email
from apps.quotas.counting import QuotaHolder, holder_of, pool_holder
from apps.quotas.models import QuotaCounter
from apps.quotas.uses import QuotaUse
from apps.workspaces.models import ServiceAccount, holder_emails

from .audit_actions import KEY_QUOTA_EXHAUSTED, KEY_QUOTA_WARNING

COUNTING = Actor.of_operator("quota counting")
WARNING_PERCENT = 80


def quota_level(used: int, allowance: int) -> int | None:
    """100 for a spent allowance, 80 from 80 % on, else None."""
    if used >= allowance:
        return 100
    return WARNING_PERCENT if used * 100 >= allowance * WARNING_PERCENT else None


def quota_thresholds_heard(counts: list[tuple[str, datetime, int]]) -> int:
    """Tell of each quota (a key's, or one a service account's keys share) whose net use
    (scope, period start, used) reached 80 % or 100 % of its period for the first time; how
    many were told."""
    wanted: dict[str, set[int]] = {"k": set(), "u": set()}
    for scope, _, _ in counts:
        if scope[:1] in wanted and scope[1:].isdigit():
            wanted[scope[:1]].add(int(scope[1:]))
    keys = ApiKey.objects.filter(
        pk__in=wanted["k"], quota_requests__isnull=False, quota_shared=False
    ).select_related("user", "workspace")
    pools = ServiceAccount.objects.filter(
        user_id__in=wanted["u"], shared_quota_requests__isnull=False, deleted_at__isnull=True
    ).select_related("user", "workspace")
    holders: dict[str, tuple[QuotaHolder, ApiKey | ServiceAccount]] = {}
    for key in keys:
        if (holder := holder_of(key)) is not None:
            holders[holder.scope] = (holder, key)
    for account in pools:
        if (quota := account.shared_quota) is not None:
            holder = pool_holder(account.user_id, quota, account.user.date_joined)
            holders[holder.scope] = (holder, account)
    told = 0
    for scope, start, used in counts:
        if scope not in holders:
            continue
        holder, whose = holders[scope]
        period = holder.period(timezone.now())
        level = quota_level(used, holder.quota.requests)
        if period.start != start or level is None:
            continue  # a count of an earlier period, or below 80 %
        told += _tell(holder, whose, QuotaUse(holder.quota, used, period), level)
    return told


def _tell(holder: QuotaHolder, whose: ApiKey | ServiceAccount, use: QuotaUse, level: int) -> int:
    """Claim the level for the period (one run tells it, however many hear it), record it and
    queue the e-mail; 1 when told, 0 when told already."""
    told_already = ("100",) if level == 100 else ("80", "100")
    key = whose if isinstance(whose, ApiKey) else None
    with transaction.atomic():
        claimed = (
            QuotaCounter.objects.filter(scope=holder.scope, period_start=use.period.start)
            .exclude(warned__in=told_already)
            .update(warned=str(level))
        )
        if not claimed:
            return 0
        audit_record(
            workspace=whose.workspace,
            action=KEY_QUOTA_EXHAUSTED if level == 100 else KEY_QUOTA_WARNING,
            actor=COUNTING,
            key=key,
            subject=f"{key.name} ({key.hint})" if key else f"{whose.name}'s shared quota",
            data={
                **use.as_json(),
                "percent": use.percent,
                **({} if key else {"serviceAccount": whose.pk, "shared": True}),
            },
        )
    _mail(whose, use, level)
    return 1


def _mail(whose: ApiKey | ServiceAccount, use: QuotaUse, level: int) -> None:
    zone = ZoneInfo(whose.workspace.timezone)
    refill = (
        f"It refills to {use.quota.requests:,} on {moment_text(use.period.end, zone)}."
        if use.period.end
        else "It is a one-off allowance: it does not refill, an owner can top it up."
    )
    spent = "refused with 429 quota-exceeded until then"
    if isinstance(whose, ApiKey):
        named, what = f"API key “{whose.name}”", f"The API key “{whose.name}” ({whose.hint})"
        state = (
            f"has used its whole quota: it is {spent}"
            if level == 100
            else f"has used {use.shown_used:,} of its {use.quota} ({use.percent} %)"
        )
        where = f"The key, its use and its history:\n{key_links(whose, settings.SITE_URL)['page']}"
    else:
        named = f"service account “{whose.name}”"
        what = f"The keys of the service account “{whose.name}”, which share one quota,"
        state = (
            f"have used the whole quota: they are {spent}"
            if level == 100
            else f"have used {use.shown_used:,} of their {use.quota} ({use.percent} %)"
        )
        page = settings.SITE_URL + reverse("team:service_account", args=[whose.pk])
        where = f"The service account and its keys:\n{page}"
    subject = (
        f"Your {named} has used its whole quota"
        if level == 100
        else f"Your {named} has used {use.percent} % of its quota"
    )
    body = f"{what} in {whose.workspace.name} {state}. {refill}\n\n{where}\n"
    if recipients := holder_emails(whose.user, whose.workspace):
        send_email.enqueue(subject, body, recipients)
