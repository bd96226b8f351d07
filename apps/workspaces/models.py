import uuid

from django.conf import settings
from django.db import models

from .choices import KeyApproval, Plan, VideoQuality


class Workspace(models.Model):
    """One customer's space on the platform; the record GET and PATCH /workspace act on."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    timezone = models.CharField(max_length=64, default="UTC")
    auto_transcribe_uploads = models.BooleanField(default=False)
    transcription_language = models.CharField(max_length=2, default="en")
    plan = models.CharField(max_length=16, choices=Plan.choices, default=Plan.STARTER)
    # A plan entitlement: changed only in the dashboard, never through the API.
    default_video_quality = models.CharField(
        max_length=8, choices=VideoQuality.choices, default=VideoQuality.P720
    )
    # Key policy, set by owners: the longest lifetime a new key may have, and whether a new key
    # may have no expiry at all.
    key_max_lifetime_days = models.PositiveSmallIntegerField(default=365)
    key_allow_no_expiry = models.BooleanField(default=True)
    # Which new keys of admins and members wait for an owner's yes; owners' own never do.
    key_approval = models.CharField(
        max_length=8, choices=KeyApproval.choices, default=KeyApproval.OFF
    )
    # Owners may require every owner, admin and member to sign in with a second factor.
    require_two_factor = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(key_approval__in=KeyApproval.values),
                name="workspace_key_approval_known",
            )
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's place in a workspace. Owners and admins use the dashboard; members the portal."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=8, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="one_membership_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.workspace}"
