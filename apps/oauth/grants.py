"""The grants, as Authlib runs them: the authorization code with PKCE (S256 only) and the MCP
resource (RFC 8707), the rotating refresh token, and the CLI's device code (RFC 8628).
Authlib parses the requests, authenticates the clients and words every error; these classes
only say where things are kept and what a state means."""

import re
from datetime import timedelta
from typing import Any

from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import (
    AccessDeniedError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    OAuth2Error,
)
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc8628 import (
    AuthorizationPendingError,
    DeviceCodeGrant,
    ExpiredTokenError,
    SlowDownError,
)
from django.db.models import F
from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import ALL_SCOPES
from apps.api_keys import tokens
from apps.common.http import client_ip
from apps.devices.models import DeviceAuthorization

from .issuing import (
    GrantRefused,
    authorization_code_find,
    grant_revoke_reused,
    refresh_token_find,
)
from .metadata import mcp_resource
from .models import AuthorizationCode, RefreshToken

SLOW_DOWN_STEP = 5  # seconds added to the interval on each poll that came too soon


def error_text(text: str) -> str:
    """An error_description OAuth allows: printable ASCII without quotes or backslashes."""
    return re.sub(r"[^\x20-\x21\x23-\x5b\x5d-\x7e]", "", text.replace("’", "'"))


def scope_checked(scope: str | None) -> str:
    """The scope parameter as RFC 6749 §3.3 writes it: scopes separated by spaces, no other
    whitespace (a tab or a no-break space would otherwise split it just the same)."""
    scope = scope or ""
    if any(ch.isspace() and ch != " " for ch in scope):
        raise InvalidScopeError("Separate scopes with spaces only.")
    return scope


def refusal(refused: GrantRefused) -> OAuth2Error:
    return OAuth2Error(description=error_text(refused.description), error=refused.error)


class InvalidTargetError(OAuth2Error):
    """RFC 8707 §2: the `resource` is not one this server issues tokens for."""

    error = "invalid_target"


class S256Only(CodeChallenge):
    """PKCE as OAuth 2.1 asks: a code challenge is required, and only S256 is accepted."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge (S256).")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("Only code_challenge_method=S256 is supported.")
        super().validate_code_challenge(grant, redirect_uri)


def _resource_check(grant: Any, presented: str | None, *, required: bool) -> None:
    expected = mcp_resource(grant.request._request)
    if presented is None and not required:
        return
    if presented != expected:
        raise InvalidTargetError(f"The resource must be {expected}.")


class McpResource:
    """RFC 8707: the authorization request must name the MCP endpoint as its `resource`."""

    def __call__(self, grant: Any) -> None:
        grant.register_hook("after_validate_authorization_request_payload", self.check)

    def check(self, grant: Any, redirect_uri: str) -> None:
        _resource_check(grant, grant.request.payload.data.get("resource"), required=True)


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]

    def validate_requested_scope(self) -> None:
        """A connected app may ask for the API's scopes, never the keys scopes: an assistant
        does not create or revoke keys (`gatehouse login` may ask for them)."""
        unknown = sorted(set(scope_checked(self.request.payload.scope).split()) - set(ALL_SCOPES))
        if unknown:
            raise InvalidScopeError(
                f"A connected app may ask for {' '.join(ALL_SCOPES)}, not {error_text(unknown[0])}."
            )

    def save_authorization_code(self, code: str, request: Any) -> None:
        from .issuing import authorization_code_save

        authorization_code_save(request.approval, code)

    def query_authorization_code(self, code: str, client: Any) -> AuthorizationCode | None:
        found = authorization_code_find(code, client)
        if found is not None and not self.request.payload.data.get("redirect_uri"):
            # RFC 6749 §4.1.3: required, since every authorization request here names one;
            # leaving it out is a malformed request, not a wrong code (invalid_grant).
            raise InvalidRequestError("redirect_uri is missing: send the authorization request's.")
        return found

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        pass  # deleted by the exchange itself (`issuing.grant_create`), so it happens once

    def authenticate_user(self, authorization_code: AuthorizationCode) -> User:
        return authorization_code.user

    def validate_token_request(self) -> None:
        super().validate_token_request()
        presented = self.request.payload.data.get("resource")
        if presented is not None and presented != self.request.authorization_code.resource:
            raise InvalidTargetError("The resource differs from the authorization request's.")


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    def validate_token_request(self) -> None:
        super().validate_token_request()
        _resource_check(self, self.request.payload.data.get("resource"), required=False)

    def authenticate_refresh_token(self, refresh_token: str) -> RefreshToken | None:
        token = refresh_token_find(refresh_token)
        if token is None:
            return None
        if token.used_at is not None:
            # The caller as the trusted-proxy setting resolves it, not the proxy's address.
            grant_revoke_reused(token, ip=client_ip(self.request._request))
            return None
        if token.is_revoked() or token.is_expired():
            return None
        return token

    def authenticate_user(self, refresh_token: RefreshToken) -> User:
        return refresh_token.grant.user

    def revoke_old_credential(self, refresh_token: RefreshToken) -> None:
        pass  # used up by the refresh itself (`issuing.grant_refresh`), race-free


class DeviceGrant(DeviceCodeGrant):
    """`gatehouse login` polling: pending, slow_down (the interval then grows by 5 s),
    access_denied, expired_token, or the CLI key; a used or unknown code is invalid_grant."""

    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]

    def query_device_credential(self, device_code: str) -> DeviceAuthorization:
        authorization = (
            DeviceAuthorization.objects.select_related("user", "workspace")
            .filter(device_code_hash=tokens.hash_secret(device_code))
            .first()
        )
        if authorization is None or authorization.status == DeviceAuthorization.Status.USED:
            raise InvalidGrantError("Unknown or already used device code.")
        return authorization

    def validate_device_credential(self, credential: DeviceAuthorization) -> User | None:
        now = timezone.now()
        if credential.is_expired():
            raise ExpiredTokenError("The login request expired; log in again.")
        if credential.status == DeviceAuthorization.Status.DENIED:
            # Denied on /device, or refused when the key was due (the approver's place changed).
            raise AccessDeniedError("The login was denied; log in again.")
        polls = DeviceAuthorization.objects.filter(pk=credential.pk)
        last = credential.last_polled_at
        if last is not None and now - last < timedelta(seconds=credential.interval):
            polls.update(last_polled_at=now, interval=F("interval") + SLOW_DOWN_STEP)
            raise SlowDownError(f"Poll every {credential.interval + SLOW_DOWN_STEP} seconds.")
        polls.update(last_polled_at=now)
        if credential.status == DeviceAuthorization.Status.PENDING:
            raise AuthorizationPendingError("Waiting for approval in the browser.")
        return credential.user
