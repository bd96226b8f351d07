"""Keeping the request log `REQUEST_LOG_DAYS` whole days: the daily job."""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.common.wording import pluralize

from .models import RequestLogEntry
from .moving import request_log_moves_prune
from .partitions import partitions_drop_before, partitions_ensure


def request_log_prune(now: datetime | None = None) -> str:
    """Keep `REQUEST_LOG_DAYS` whole days (UTC): on PostgreSQL drop older days' partitions and
    make the next two days', elsewhere delete older rows."""
    today = (now or timezone.now()).astimezone(UTC).date()
    first_kept = today - timedelta(days=settings.REQUEST_LOG_DAYS - 1)
    if connection.vendor == "postgresql":
        partitions_ensure({today, today + timedelta(days=1), today + timedelta(days=2)})
        dropped = partitions_drop_before(first_kept)
        return f"dropped {len(dropped)} day{pluralize(len(dropped))} of the request log"
    start = datetime(first_kept.year, first_kept.month, first_kept.day, tzinfo=UTC)
    deleted, _ = RequestLogEntry.objects.filter(at__lt=start).delete()
    return f"deleted {deleted} request log row{pluralize(deleted)}"


def request_log_daily() -> str:
    """The daily job."""
    request_log_moves_prune()
    return request_log_prune()
