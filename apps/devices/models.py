from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.api.scopes import ALL_SCOPES
from apps.api_keys.models import ApiKey
from apps.workspaces.models import Workspace


class DeviceAuthorization(models.Model):
    """One `gatehouse login` (RFC 8628): a device code the CLI polls with, a user code a person
    confirms on /device. Only the keyed hash of the device code is stored."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for approval"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        USED = "used", "Key issued"

    device_code_hash = models.CharField(max_length=64)
    user_code = models.CharField(max_length=8)  # 8 letters, without the dash
    client_id = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)  # what the CLI asked for; [] when it named none
    installation_id = models.CharField(max_length=64)
    device_name = models.CharField(max_length=100)
    requested_ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    interval = models.PositiveIntegerField(default=5)  # seconds; raised by 5 on each slow_down
    last_polled_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Set on approval: who approved, for which workspace, with which (possibly narrowed) scopes.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    approved_scopes = models.JSONField(default=list)
    key = models.OneToOneField(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="device_login"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["device_code_hash"], name="unique_device_code_hash"),
            # A user code names one pending login, never two.
            models.UniqueConstraint(
                fields=["user_code"],
                condition=Q(status="pending"),
                name="unique_pending_user_code",
            ),
        ]
        indexes = [models.Index(fields=["expires_at"], name="device_auth_expires")]

    def __str__(self) -> str:
        return f"{self.device_name} ({self.get_status_display()})"

    @property
    def grantable_scopes(self) -> list[str]:
        """What the approver may grant: what was asked, or any scope when nothing was."""
        return list(self.scopes) or list(ALL_SCOPES)

    @property
    def suggested_scopes(self) -> list[str]:
        """What the approval page ticks first: what was asked, or read-only when nothing was."""
        return list(self.scopes) or [s for s in ALL_SCOPES if s.endswith(":read")]

    # Authlib's DeviceCredentialMixin, as the device grant asks it
    def get_client_id(self) -> str:
        return self.client_id

    def get_scope(self) -> str:
        return " ".join(self.approved_scopes)

    def get_user_code(self) -> str:
        return self.user_code

    def is_expired(self) -> bool:
        return timezone.now() >= self.expires_at

    @property
    def user_code_display(self) -> str:
        return f"{self.user_code[:4]}-{self.user_code[4:]}"
