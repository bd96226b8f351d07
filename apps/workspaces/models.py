import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.common.quota_periods import PERIODS, Quota

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
    # Keys unused (or never used since their creation) for this many days are revoked by the
    # daily schedule, after a warning 7 days before; null: never (docs/product.md §13).
    key_idle_days = models.PositiveSmallIntegerField(null=True, blank=True)
    # Every new member key's quota unless an owner sets another ({"requests": N, "period": …},
    # docs/product.md §17); null: none.
    member_quota = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(key_approval__in=KeyApproval.values),
                name="workspace_key_approval_known",
            ),
            models.CheckConstraint(
                condition=models.Q(key_idle_days__isnull=True)
                | models.Q(key_idle_days__gte=30, key_idle_days__lte=365),
                name="workspace_key_idle_days_in_range",
            ),
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

    class Source(models.TextChoices):
        INVITED = "invited", "Invited"  # the Team page's invitation, or the workspace's maker
        SCIM = "scim", "SCIM"  # provisioned by the workspace's identity provider
        SSO = "sso", "SSO"  # linked by a sign-in through the workspace's identity provider

    role = models.CharField(max_length=8, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.INVITED)
    # Suspended by the identity provider (SCIM `active: false`, docs/product.md §16): the
    # workspace is closed to them and their keys in it answer `suspended-key` until restored.
    suspended_at = models.DateTimeField(null=True, blank=True)
    # The identity provider's own id of the person (SCIM `externalId`), when it sent one.
    external_id = models.CharField(max_length=255, blank=True, default="")
    # What the provider calls them (SCIM `userName`, kept verbatim; empty: their e-mail) and
    # the rest of its User record as it sent it (name, displayName, emails), returned as sent.
    scim_user_name = models.CharField(max_length=255, blank=True, default="")
    scim_profile = models.JSONField(default=dict, blank=True)
    # The workspace's OpenID provider's stable subject (`sub`) for this person, once linked.
    sso_subject = models.CharField(max_length=255, blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="one_membership_per_user"),
            models.UniqueConstraint(
                fields=["workspace", "external_id"],
                condition=~models.Q(external_id=""),
                name="one_membership_per_external_id",
            ),
            models.UniqueConstraint(
                fields=["workspace", "sso_subject"],
                condition=~models.Q(sso_subject=""),
                name="one_membership_per_sso_subject",
            ),
            models.UniqueConstraint(
                fields=["workspace", "scim_user_name"],
                condition=~models.Q(scim_user_name=""),
                name="one_membership_per_scim_user_name",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.workspace}"


class ServiceAccount(models.Model):
    """A holder of workspace keys that is not a person (docs/product.md §12): an admin of one
    workspace with no password and no sign-in, so the integrations its keys serve outlive the
    people who set them up. Deleting one keeps the row (its keys' history names it) and ends
    its place in the workspace."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="service_accounts"
    )
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account"
    )
    name = models.CharField(max_length=100)
    description = models.TextField(max_length=500, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # One allowance all its keys draw from (quotaShared, docs/product.md §17); null for none.
    # Its periods start at the account's user's creation, which every key's row joins.
    shared_quota_requests = models.PositiveIntegerField(null=True, blank=True)
    shared_quota_period = models.CharField(max_length=8, blank=True, default="")

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(shared_quota_requests__isnull=True, shared_quota_period="")
                | models.Q(shared_quota_requests__gte=1, shared_quota_period__in=PERIODS),
                name="service_account_shared_quota_whole",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} (service account of {self.workspace})"

    @property
    def shared_quota(self) -> Quota | None:
        requests, period = self.shared_quota_requests, self.shared_quota_period
        return Quota(requests, period) if requests else None


def owner_emails(workspace: "Workspace", *, besides: int | None = None) -> list[str]:
    """The e-mail addresses of a workspace's active owners (sorted), leaving out the user
    `besides`: who is told of what concerns the whole workspace."""
    owners = Membership.objects.filter(
        workspace=workspace, role=Membership.Role.OWNER, user__is_active=True
    )
    if besides is not None:
        owners = owners.exclude(user_id=besides)
    return sorted(owners.values_list("user__email", flat=True))


def holder_emails(user: Any, workspace: "Workspace") -> list[str]:
    """Who hears of a key: its holder, or for a service account's key the workspace's owners."""
    if not user.is_service_account:
        return [user.email]
    return owner_emails(workspace)
