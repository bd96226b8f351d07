"""The one authorization server, on Authlib's Django integration: the authorization code and
refresh grants of connected apps, the CLI's device grant, registration (RFC 7591) and
revocation (RFC 7009). What it issues are Gatehouse keys (`issuing.py`)."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from authlib.integrations.django_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749.errors import (
    InvalidRequestError,
    OAuth2Error,
    UnauthorizedClientError,
)
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.common.http import client_ip
from apps.common.validation import InvalidInput, clean_text
from apps.devices.codes import new_user_code
from apps.devices.models import DeviceAuthorization
from apps.leaks.old_secrets import old_secret_grace_end
from apps.leaks.secrets import api_key_find_by_secret

from .cli_keys import cli_key_issue
from .clients import (
    APP_GRANT_TYPES,
    DEVICE_CODE_GRANT,
    oauth_client_find,
)
from .grants import (
    AuthorizationCodeGrant,
    DeviceGrant,
    McpResource,
    RefreshTokenGrant,
    S256Only,
    error_text,
    refusal,
    scope_checked,
)
from .issuing import (
    GrantRefused,
    IssuedTokens,
    grant_create,
    grant_refresh,
    grant_revoke,
    refresh_token_find,
)
from .models import OAuthClient, OAuthGrant, RefreshToken

DEVICE_CODE_LIFETIME = 15 * 60
PRUNE_DEVICE_LOGINS_AFTER = 60 * 60  # expired logins kept this long (their slow_down answers)


def _no_token(**_: Any) -> dict[str, Any]:
    """The token's frame; `save_token` fills in the key's secret when it creates the key."""
    return {"token_type": "Bearer"}


class GatehouseAuthorizationServer(AuthorizationServer):
    def __init__(self) -> None:
        super().__init__(OAuthClient, OAuthGrant)
        # Every scope a key can hold; connected apps are narrowed to the API's own by their
        # grant (`grants.AuthorizationCodeGrant`), the CLI may also ask for the keys scopes.
        self.scopes_supported = list(EVERY_SCOPE)
        self.register_token_generator("default", _no_token)
        self.register_grant(AuthorizationCodeGrant, [S256Only(required=True), McpResource()])
        self.register_grant(RefreshTokenGrant)
        self.register_grant(DeviceGrant)
        self.register_endpoint(Revocation)

    def query_client(self, client_id: str) -> OAuthClient | None:
        return oauth_client_find(client_id)

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        ip = client_ip(request._request)
        try:
            if request.payload.grant_type == "authorization_code":
                issued: IssuedTokens = grant_create(request.authorization_code, ip=ip)
            elif request.payload.grant_type == "refresh_token":
                issued = grant_refresh(request.refresh_token, ip=ip)
            else:
                issued = cli_key_issue(request.credential, ip=ip)
        except GrantRefused as refused:
            raise refusal(refused) from None
        token.update(
            access_token=issued.access_token,
            expires_in=issued.expires_in,
            scope=" ".join(issued.scopes),
        )
        if issued.refresh_token:
            token["refresh_token"] = issued.refresh_token
        if request.payload.grant_type not in APP_GRANT_TYPES:
            # RFC 6749 §5.1 allows more parameters: what the CLI tells its user it replaced.
            token["replaced_keys"] = list(issued.replaced_hints)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass  # nothing listens to Authlib's signals: every change is audited where it is made


class CliDeviceAuthorization(DeviceAuthorizationEndpoint):
    """POST /oauth/device/code for `gatehouse login` (RFC 8628 §3.1), one per request: it
    keeps the device's name and installation beside the codes."""

    CLIENT_AUTH_METHODS = ["none"]
    EXPIRES_IN = DEVICE_CODE_LIFETIME

    def __init__(self, request: HttpRequest) -> None:
        super().__init__(SERVER)
        self.http_request = request

    def authenticate_client(self, request: Any) -> OAuthClient:
        client = super().authenticate_client(request)
        if not client.check_grant_type(DEVICE_CODE_GRANT):
            raise UnauthorizedClientError("This client may not use the device grant.")
        return client

    def generate_user_code(self) -> str:
        code = new_user_code()
        return f"{code[:4]}-{code[4:]}"

    def get_verification_uri(self) -> str:
        return str(self.http_request.build_absolute_uri(reverse("devices:approve")))

    def save_device_credential(self, client_id: str, scope: str, data: dict[str, Any]) -> None:
        from apps.api_keys import tokens

        form = self.http_request.POST
        for name, limit in (("device_name", 100), ("installation_id", 64)):
            if len(form.get(name, "")) > limit:  # as sent: what the document counts
                raise InvalidRequestError(f"{name} must be at most {limit} characters.")
        ip = client_ip(self.http_request)
        try:
            # Both are the CLI's extras; a generic RFC 8628 client sends neither, and its key is
            # named after the client and the address it logged in from.
            if form.get("device_name", "").strip():
                device_name = clean_text(form["device_name"], "device_name", max_length=100)
            else:
                client = oauth_client_find(client_id)
                named = client.client_name if client else client_id
                device_name = f"{named} from {ip or 'an unknown address'}"[:100]
        except InvalidInput as error:
            raise InvalidRequestError(error_text(error.message)) from None
        try:
            installation_id = (
                clean_text(form["installation_id"], "installation_id", max_length=64)
                if "installation_id" in form
                else ""
            )
        except InvalidInput as error:
            raise InvalidRequestError(error_text(error.message)) from None
        now = timezone.now()
        expired = now - timedelta(seconds=PRUNE_DEVICE_LOGINS_AFTER)
        DeviceAuthorization.objects.filter(expires_at__lt=expired, key__isnull=True).delete()
        DeviceAuthorization.objects.create(
            device_code_hash=tokens.hash_secret(data["device_code"]),
            user_code=data["user_code"].replace("-", ""),
            client_id=client_id,
            scopes=sorted(set(scope_checked(scope).split())),
            installation_id=installation_id,
            device_name=device_name,
            requested_ip=ip,
            created_at=now,
            expires_at=now + timedelta(seconds=DEVICE_CODE_LIFETIME),
            interval=self.INTERVAL,
        )


@dataclass(frozen=True)
class Revocable:
    """What a token presented to /oauth/revoke turned out to be."""

    key: ApiKey | None = None
    refresh: RefreshToken | None = None
    secret: str = ""  # a key's, as presented: it may be a handed-over key's old secret too

    def check_client(self, client: OAuthClient) -> bool:
        if self.refresh is not None:
            return bool(self.refresh.grant.client_id == client.pk)
        return True  # holding a key's secret is enough to revoke it (`gatehouse logout`)


class Revocation(RevocationEndpoint):
    """POST /oauth/revoke (RFC 7009): a key's secret revokes the key (and the connected app's
    grant it belongs to); a refresh token ends its grant. Unknown tokens are answered alike."""

    CLIENT_AUTH_METHODS = ["none"]

    def authenticate_endpoint_client(self, request: Any) -> OAuthClient:
        if not request.payload.client_id:  # the holder of a key, with no client to name
            request.client = OAuthClient(client_id="", source=OAuthClient.Source.BUILT_IN)
            return request.client
        return super().authenticate_endpoint_client(request)

    def check_params(self, request: Any, client: Any) -> None:
        if "token" not in request.form:
            raise InvalidRequestError("Send the token to revoke.")
        # The hint is not needed: a token's prefix tells a key from a refresh token.

    def query_token(self, token_string: str, token_type_hint: str | None) -> Revocable | None:
        if token_string.startswith("grt_"):
            refresh = refresh_token_find(token_string)
            return Revocable(refresh=refresh) if refresh else None
        key = api_key_find_by_secret(token_string)
        return Revocable(key=key, secret=token_string) if key else None

    def revoke_token(self, token: Revocable, request: Any) -> None:
        ip = client_ip(request._request)
        grant = token.refresh.grant if token.refresh else _grant_of(token.key)
        if grant is not None:
            grant_revoke(grant, actor=Actor.of_user(grant.user, ip))
        elif token.key is not None:
            api_key_revoke(key=token.key, actor=Actor.of_key(token.key, ip))
        if token.key is not None:  # the old secret of a handed-over key stops acting as the new
            actor = Actor.of_key(token.key, ip)
            old_secret_grace_end(token.secret, named=token.key, actor=actor, reason="revoked")


def _grant_of(key: ApiKey | None) -> OAuthGrant | None:
    if key is None:
        return None
    return OAuthGrant.objects.select_related("client", "user").filter(key=key).first()


SERVER = GatehouseAuthorizationServer()


def endpoint_answer(endpoint: Any, request: HttpRequest) -> Any:
    """Run a per-request endpoint (device authorization, registration) the way the server runs
    its own: its answer, or its OAuth error."""
    try:
        oauth_request = endpoint.create_endpoint_request(request)
        return SERVER.handle_response(*endpoint(oauth_request))
    except OAuth2Error as error:
        return SERVER.handle_error_response(None, error)
