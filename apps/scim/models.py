from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace


class ScimToken(models.Model):
    """The identity provider's credential for a workspace's /scim/v2/ (docs/product.md §16):
    made by an owner, shown once, stored only as the keyed hash of its secret, good nowhere
    else."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="scim_tokens")
    name = models.CharField(max_length=100)
    secret_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=16)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint})"


class ScimRequest(models.Model):
    """One request the identity provider made, with its outcome: the last ones are shown to
    owners beside the tokens, so a provider's failing push is seen where it is set up."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="scim_requests")
    token = models.ForeignKey(ScimToken, on_delete=models.SET_NULL, null=True, related_name="+")
    at = models.DateTimeField(default=timezone.now)
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=200)
    status = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=300)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["workspace", "-at"], name="scim_request_ws_at")]

    def __str__(self) -> str:
        return f"{self.method} {self.path} → {self.status}"
