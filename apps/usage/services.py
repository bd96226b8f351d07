"""Keeping usage rows as long as they are useful: hours 90 days, days 13 months."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from .models import KeyNetwork, KeyUsageDay, KeyUsageHour

HOURS_KEPT = timedelta(days=90)
DAYS_KEPT = timedelta(days=396)  # 13 months
NETWORKS_KEPT = timedelta(days=396)


@dataclass(frozen=True)
class Pruned:
    hours: int
    days: int
    networks: int


def usage_prune(now: datetime | None = None) -> Pruned:
    """Delete hourly rows older than 90 days, daily rows older than 13 months, and networks not
    seen for 13 months. Idempotent: run it daily (`manage.py pruneusage`)."""
    now = now or timezone.now()
    hours, _ = KeyUsageHour.objects.filter(hour__lt=now - HOURS_KEPT).delete()
    days, _ = KeyUsageDay.objects.filter(day__lt=(now - DAYS_KEPT).date()).delete()
    networks, _ = KeyNetwork.objects.filter(last_seen__lt=now - NETWORKS_KEPT).delete()
    return Pruned(hours=hours, days=days, networks=networks)
