"""Audit streams of a workspace, and the events each has yet to deliver (its outbox)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace

PAUSED = "Paused by an owner."  # the disabled_reason of a stream an owner paused


class AuditStream(models.Model):
    """Where a workspace's audit events go as they happen: an HTTPS endpoint (JSON lines,
    signed with a `whsec_` secret, custom headers whose values are kept encrypted) or a syslog
    server (RFC 5424 over TLS). `next_seq` numbers its events in commit order."""

    class Kind(models.TextChoices):
        HTTPS = "https", "HTTPS endpoint"
        SYSLOG = "syslog", "Syslog over TLS"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=100)
    actions = models.JSONField(default=list, blank=True)  # audit action codes; [] = every event
    # HTTPS
    url = models.URLField(max_length=2000, blank=True)
    secret_encrypted = models.TextField(blank=True)
    header_names = models.JSONField(default=list, blank=True)  # shown; the values never are
    headers_encrypted = models.TextField(blank=True)  # a sealed JSON object of name → value
    # Syslog
    host = models.CharField(max_length=253, blank=True)
    port = models.PositiveIntegerField(null=True, blank=True)
    ca_pem = models.TextField(blank=True)  # the certificates to trust, PEM (public, not secret)

    enabled = models.BooleanField(default=True)  # off: paused by an owner, or after failures
    disabled_reason = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    next_seq = models.BigIntegerField(default=0)  # the last number given to one of its events
    # A worker sending its events holds it until then; another leaves it alone.
    locked_until = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)  # after a failure
    failures = models.PositiveIntegerField(default=0)  # in a row
    failing_since = models.DateTimeField(null=True, blank=True)
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    delivered_count = models.BigIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def destination(self) -> str:
        """Where it sends, in a line (never a header value)."""
        return self.url if self.kind == self.Kind.HTTPS else f"{self.host}:{self.port}"


class AuditStreamItem(models.Model):
    """An event a stream has yet to deliver, numbered in the order the events were committed;
    written in the transaction of the event, deleted once delivered. A test event has no audit
    event but a payload of its own."""

    stream = models.ForeignKey(AuditStream, on_delete=models.CASCADE, related_name="items")
    seq = models.BigIntegerField()
    event = models.ForeignKey(
        "audit.AuditEvent", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    payload = models.TextField(blank=True)  # a test event's JSON
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["stream", "seq"], name="audit_stream_item_seq")
        ]

    def __str__(self) -> str:
        return f"{self.stream_id}#{self.seq}"
