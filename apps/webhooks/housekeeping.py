"""How long delivery logs are kept."""

from datetime import datetime, timedelta

from django.utils import timezone

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
