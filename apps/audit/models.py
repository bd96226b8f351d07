from django.conf import settings
from django.db import models
from django.utils import timezone


class Action(models.TextChoices):
    KEY_CREATED = "key.created", "Key created"
    KEY_REVOKED = "key.revoked", "Key revoked"
    KEY_FIRST_USED = "key.first_used", "Key first used"
    KEY_LEAKED = "key.leaked", "Key found leaked"
    KEY_ROLLED = "key.rolled", "Key rolled"
    KEY_UPDATED = "key.updated", "Key renamed or described"
    KEY_NARROWED = "key.narrowed", "Key permissions narrowed"
    MEMBER_KEY_CREATED = "member_key.created", "Member key created"
    MEMBER_KEY_REVOKED = "member_key.revoked", "Member key revoked"
    CLI_LOGIN = "cli.login", "CLI login"
    SETTINGS_CHANGED = "settings.changed", "Settings changed"
    TEAM_MEMBER_ADDED = "team.member_added", "Teammate added"
    TEAM_ROLE_CHANGED = "team.role_changed", "Role changed"
    TEAM_MEMBER_REMOVED = "team.member_removed", "Teammate removed"
    COMMUNITY_MEMBER_REMOVED = "community.member_removed", "Community member removed"
    INVITATION_SENT = "invitation.sent", "Invitation sent"
    INVITATION_ACCEPTED = "invitation.accepted", "Invitation accepted"
    INVITATION_WITHDRAWN = "invitation.withdrawn", "Invitation withdrawn"


class AuditEvent(models.Model):
    """One thing that happened in a workspace, with who did it. Append-only: written by
    `audit_record` in the transaction of the change, never updated or deleted."""

    workspace = models.ForeignKey(
        "workspaces.Workspace", on_delete=models.CASCADE, related_name="audit_events"
    )
    action = models.CharField(max_length=32, choices=Action.choices)
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
        indexes = [models.Index(fields=["workspace", "-created_at"], name="audit_ws_created")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action} by {self.actor_label}"
