"""How long delivery logs are kept, and the sweep that queues again the deliveries whose task
was lost."""

from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from .delivery import deliver_one
from .models import WebhookDelivery

DELIVERIES_KEPT = timedelta(days=30)


def deliveries_prune(now: datetime | None = None) -> int:
    """Delete finished deliveries (and their attempts) older than 30 days; daily."""
    now = now or timezone.now()
    deleted, _ = (
        WebhookDelivery.objects.filter(created_at__lt=now - DELIVERIES_KEPT)
        .exclude(status=WebhookDelivery.Status.PENDING)
        .delete()
    )
    return deleted


def sweep(now: datetime | None = None, limit: int = 500) -> int:
    """Queue again the deliveries that are due and not held, whose task was lost (a worker
    killed mid-attempt, a queue emptied): a safety net, run every minute. Returns how many."""
    now = now or timezone.now()
    stale = now - timedelta(minutes=5)
    lost = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=stale
        )
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .values_list("message_id", flat=True)[:limit]
    )
    for message_id in lost:
        deliver_one.enqueue(message_id)
    # An event's fan-out task taken by a worker that died is taken back by the workers' lease
    # (apps/jobs/workers.py), like any other task.
    return len(lost)
