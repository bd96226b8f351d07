from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace


class SingleSignOn(models.Model):
    """A workspace's identity provider for signing in (docs/product.md §16): an OpenID Connect
    issuer and this workspace's client there (the client secret kept sealed: it must be read to
    sign in), or a SAML 2.0 identity provider given by its metadata."""

    class Protocol(models.TextChoices):
        OIDC = "oidc", "OpenID Connect"
        SAML = "saml", "SAML 2.0"

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
    protocol = models.CharField(max_length=4, choices=Protocol.choices, default=Protocol.OIDC)
    # OpenID Connect
    issuer = models.URLField(max_length=300, blank=True)
    client_id = models.CharField(max_length=200, blank=True)
    client_secret_sealed = models.TextField(blank=True)
    # SAML 2.0: the identity provider's metadata as the owner gave it, and its entity id.
    saml_metadata = models.TextField(blank=True)
    saml_entity_id = models.CharField(max_length=300, blank=True)
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
        return f"{self.provider} for {self.workspace}"

    @property
    def provider(self) -> str:
        """Who speaks for the workspace: the OpenID issuer or the SAML entity id."""
        return self.saml_entity_id if self.protocol == self.Protocol.SAML else self.issuer


class SamlRequest(models.Model):
    """An AuthnRequest sent to a workspace's SAML identity provider, kept server-side: the
    provider's answer is POSTed from its own site, which brings no session cookie (SameSite),
    so the answer is checked against these, used once (a replayed answer finds its request
    used), and hands the browser a one-time ticket to finish the sign-in with its session."""

    request_id = models.CharField(max_length=100, unique=True)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    test = models.BooleanField(default=False)
    # The keyed hash of a secret the starting browser's session holds: the ticket finishes the
    # sign-in in that browser only (no one can hand theirs to another person's browser).
    browser_hash = models.CharField(max_length=64, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    # Set from the checked answer: who the provider signed in, and the ticket's keyed hash.
    subject = models.CharField(max_length=255, blank=True)
    email = models.CharField(max_length=254, blank=True)
    ticket_hash = models.CharField(max_length=64, blank=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"SAML request {self.request_id} of {self.workspace_id}"
