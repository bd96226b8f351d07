"""The answered requests a quota counts, from the usage tables: what a quota's count is rebuilt
from when Redis lost it (apps/quotas/counting.py)."""

from datetime import datetime, timedelta

from django.db.models import Q, QuerySet, Sum
from django.utils import timezone

from apps.quotas.counting import QuotaHolder

from .models import KeyUsageDay, KeyUsageHour

# Hours are kept 90 days (days 13 months): older than this, a period is counted by the day.
HOURS_TRUSTED = timedelta(days=80)
# MCP's own methods are counted in usage (as mcp:initialize, mcp:tools/list…), never in a quota.
_MCP_METHODS = Q(operation__startswith="mcp:", operation__contains="/") | Q(
    operation__in=["mcp:initialize", "mcp:ping", "mcp:response", "mcp:unknown-method", "mcp:mcp"]
)


def holder_keys(holder: QuotaHolder) -> Q:
    """The usage rows of the holder's keys: a key's, or all its service account's keys'."""
    if holder.pool_user_id is None:
        return Q(key_id=holder.key_id)
    return Q(key__user_id=holder.pool_user_id)


def counted_hours(holder: QuotaHolder, since: datetime) -> QuerySet[KeyUsageHour]:
    """The hourly rows a quota counts (2xx, MCP's own methods left out) from `since`'s hour."""
    hour = since.replace(minute=0, second=0, microsecond=0)
    rows = KeyUsageHour.objects.filter(holder_keys(holder), outcome="2xx", hour__gte=hour)
    return rows.exclude(_MCP_METHODS)


def answered_since(holder: QuotaHolder, since: datetime) -> int:
    """The 2xx answers of the holder's keys (a key, or all a service account's keys for a
    shared quota) from the hour holding `since` on (that hour in full: a rebuild may count a
    few requests too many, never too few)."""
    hour = since.replace(minute=0, second=0, microsecond=0)
    cutoff = (timezone.now() - HOURS_TRUSTED).replace(hour=0, minute=0, second=0, microsecond=0)
    total = 0
    if hour < cutoff:
        days = KeyUsageDay.objects.filter(
            holder_keys(holder), outcome="2xx", day__gte=hour.date(), day__lt=cutoff.date()
        )
        total += days.exclude(_MCP_METHODS).aggregate(n=Sum("count"))["n"] or 0
        hour = cutoff
    hours = counted_hours(holder, hour)
    return total + (hours.aggregate(n=Sum("count"))["n"] or 0)
