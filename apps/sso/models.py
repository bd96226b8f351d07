from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace


class SingleSignOn(models.Model):
    """A workspace's OpenID Connect provider (docs/product.md §16): its issuer and this
    workspace's client there. The client secret is kept sealed (it must be read to sign in)."""

    class Mode(models.TextChoices):
        OFF = "off", "Off"
        ALLOWED = "allowed", "Allowed: single sign-on or password"
        REQUIRED = (
            "required",
            "Required: single sign-on only (owners keep password + second factor)",
        )

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, related_name="single_sign_on"
    )
    issuer = models.URLField(max_length=300)
    client_id = models.CharField(max_length=200)
    client_secret_sealed = models.TextField()
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.OFF)
    # An owner's successful test sign-in: required needs one since the provider last changed.
    tested_at = models.DateTimeField(null=True, blank=True)
    tested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(mode__in=["off", "allowed", "required"]), name="sso_mode_known"
            ),
            models.CheckConstraint(
                condition=~models.Q(mode="required") | models.Q(tested_at__isnull=False),
                name="sso_required_after_a_test",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.issuer} for {self.workspace}"
