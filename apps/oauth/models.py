"""What the authorization server keeps: the apps that sign in, the codes of the authorization
step, and each grant with its one key and its refresh tokens. Codes and refresh tokens are
stored as keyed hashes only, as key secrets are."""

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.workspaces.models import Workspace

from .redirects import redirect_uri_matches, redirect_uri_problem


class OAuthClient(models.Model):
    """An app that signs people in: registered by RFC 7591, or known by its Client ID Metadata
    Document (its `client_id` is the document's https address, re-fetched when its cache ends).

    Implements Authlib's ClientMixin: public clients only (no secret), the grant types and
    redirect addresses it declared.
    """

    class Source(models.TextChoices):
        REGISTERED = "registered", "Registered"
        DOCUMENT = "document", "Metadata document"
        BUILT_IN = "built_in", "Built in"

    client_id = models.CharField(max_length=2048)
    source = models.CharField(max_length=16, choices=Source.choices)
    client_name = models.CharField(max_length=200)
    client_uri = models.CharField(max_length=2048, blank=True, default="")
    redirect_uris = models.JSONField(default=list)
    grant_types = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    registered_ip = models.GenericIPAddressField(null=True, blank=True)
    # A metadata document is used until then (its HTTP caching headers, within limits).
    fetched_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client_id"], name="unique_oauth_client")]

    def __str__(self) -> str:
        return self.client_name

    @property
    def host(self) -> str:
        """Where the app sends people back: the host of its first redirect address."""
        return urlsplit(self.redirect_uris[0]).netloc if self.redirect_uris else ""

    # Authlib's ClientMixin
    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> None:
        return None  # redirect_uri is always required: a public client names it each time

    def get_allowed_scope(self, scope: str) -> str:
        return scope or ""  # the consent page narrows; unknown scopes are refused before

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        """A registered address, and one today's rules accept: an app registered before a
        rule tightened (a browser's scheme, say) is held to the rule now."""
        return redirect_uri_problem(redirect_uri) is None and any(
            redirect_uri_matches(r, redirect_uri) for r in self.redirect_uris
        )

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code" and "authorization_code" in self.grant_types

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


class AuthorizationCode(models.Model):
    """The code of one approval (RFC 6749 §4.1.2), bound to its PKCE challenge, redirect and
    resource; exchanged once within minutes."""

    code_hash = models.CharField(max_length=64)
    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=ApiKey.Kind.choices)
    scopes = models.JSONField(default=list)
    restrictions = models.JSONField(default=dict)
    redirect_uri = models.CharField(max_length=2048)
    resource = models.CharField(max_length=2048)
    code_challenge = models.CharField(max_length=128)
    code_challenge_method = models.CharField(max_length=8)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # Kept after use until it expires: a code presented twice ends the grant it gave.
    used_at = models.DateTimeField(null=True, blank=True)
    reused_at = models.DateTimeField(null=True, blank=True)  # presented again after use
    grant = models.ForeignKey(
        "OAuthGrant", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["code_hash"], name="unique_oauth_code")]

    def __str__(self) -> str:
        return f"Code for {self.client_id} until {self.expires_at:%H:%M:%S}"

    # Authlib's AuthorizationCodeMixin
    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return " ".join(self.scopes)

    def get_nonce(self) -> None:
        return None

    def get_auth_time(self) -> None:
        return None


class OAuthGrant(models.Model):
    """One app connected by one person: a row under Connected apps. It holds one key (tagged
    MCP, an hour at a time) and a chain of refresh tokens; revoking it ends both."""

    client = models.ForeignKey(OAuthClient, on_delete=models.PROTECT, related_name="grants")
    client_name = models.CharField(max_length=200)  # as shown when approved
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    key = models.OneToOneField(ApiKey, on_delete=models.CASCADE, related_name="oauth_grant")
    created_at = models.DateTimeField()
    refreshed_at = models.DateTimeField(null=True, blank=True)
    refresh_audited_at = models.DateTimeField(null=True, blank=True)  # oauth.refreshed: daily
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["workspace", "user"], name="oauth_grant_holder")]

    def __str__(self) -> str:
        return f"{self.client_name} for {self.user}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class RefreshToken(models.Model):
    """One refresh token of a grant. Each is used once: its use issues the next, and a used
    one presented again revokes the grant (someone else holds a copy)."""

    grant = models.ForeignKey(OAuthGrant, on_delete=models.CASCADE, related_name="refresh_tokens")
    token_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["token_hash"], name="unique_refresh_token")]

    def __str__(self) -> str:
        return f"Refresh token of grant {self.grant_id}"

    # Authlib's TokenMixin, as the refresh grant asks it
    def check_client(self, client: Any) -> bool:
        return bool(self.grant.client_id == client.pk)

    def get_scope(self) -> str:
        return " ".join(self.grant.key.scopes)

    def get_expires_in(self) -> int:
        return int((self.expires_at - self.created_at).total_seconds())

    def is_expired(self) -> bool:
        return timezone.now() >= self.expires_at

    def is_revoked(self) -> bool:
        return self.used_at is not None or self.grant.revoked_at is not None
