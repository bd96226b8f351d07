"""Webhook endpoints of a workspace, the deliveries of events to them, and each attempt."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace


class WebhookEndpoint(models.Model):
    """An owner's URL that receives the workspace's events, signed with its `whsec_` secret
    (kept encrypted: it must be read to sign). While a secret rolls, the previous one signs too
    until `previous_secret_expires_at`."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    event_types = models.JSONField(default=list)  # the types it receives
    enabled = models.BooleanField(default=True)
    secret_encrypted = models.TextField()
    previous_secret_encrypted = models.TextField(blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Since when every attempt has failed (None after a success); 5 days of it disables.
    failing_since = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event for one endpoint: its payload as sent (the same bytes on every attempt, with
    the same `webhook-id`), and where it stands."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    message_id = models.CharField(max_length=40, unique=True)
    event_type = models.CharField(max_length=40)
    payload = models.TextField()  # the JSON body, exactly as signed
    created_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # A worker sending it holds it until then: another worker (or the sweep) leaves it alone.
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_due"),
            models.Index(fields=["endpoint", "-created_at"], name="webhook_log"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.message_id}"


class WebhookAttempt(models.Model):
    """One try at a delivery: what came back, or why nothing did."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="tries")
    number = models.PositiveIntegerField()
    at = models.DateTimeField(default=timezone.now)
    duration_ms = models.PositiveIntegerField(default=0)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True)  # the first 2 KB
    error = models.CharField(max_length=300, blank=True)
    succeeded = models.BooleanField(default=False)
    manual = models.BooleanField(default=False)  # redelivered by hand

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}"
