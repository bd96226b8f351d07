from django.conf import settings
from django.db import models
from django.utils import timezone

from .actions import action_label


class AuditEvent(models.Model):
    """One thing that happened in a workspace, with who did it. Append-only: written by
    `audit_record` in the transaction of the change, never updated or deleted."""

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="audit_events"
    )
    action = models.CharField(max_length=32)  # a code of some app's audit_actions.py
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Exactly one kind of actor: a user in the dashboard, a key through the API, or an operator.
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_key = models.ForeignKey(
        "api_keys.ApiKey", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_label = models.CharField(max_length=254)  # what the actor was called at the time
    ip = models.GenericIPAddressField(null=True, blank=True)
    key = models.ForeignKey(
        "api_keys.ApiKey",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="audit_events",
    )
    subject = models.CharField(max_length=254, blank=True)  # e.g. the key's name and hint
    data = models.JSONField(default=dict, blank=True)  # field/before/after, role, ...

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "-created_at"], name="audit_ws_created"),
            # The Audit page filtered by action, and a key's page finding the hand-over that
            # names it (key.handed_over): without it, a scan of the workspace's whole log.
            models.Index(fields=["workspace", "action", "-created_at"], name="audit_ws_action"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action} by {self.actor_label}"

    @property
    def action_label(self) -> str:
        """The action in the words its app declared."""
        return action_label(self.action)
