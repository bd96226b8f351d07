"""POST /oauth/register (RFC 7591) on Authlib's registration endpoint: public clients of
the authorization code grant for MCP clients without a client ID metadata document."""

import json
from typing import Any

from authlib.oauth2.rfc7591 import ClientMetadataClaims, ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError, InvalidRedirectURIError
from django.http import HttpRequest

from apps.common.http import client_ip
from apps.common.validation import InvalidInput, clean_text

from .clients import APP_GRANT_TYPES, client_name_clean
from .grants import error_text
from .metadata import authorization_server_document
from .models import OAuthClient
from .redirects import redirect_uri_problem, redirect_uris_clean
from .server import SERVER

REGISTRATION_STRINGS = (
    "client_name",
    "client_uri",
    "logo_uri",
    "tos_uri",
    "policy_uri",
    "jwks_uri",
    "scope",
    "software_id",
    "software_version",
    "token_endpoint_auth_method",
    "application_type",
)


REGISTRATION_LISTS = ("redirect_uris", "grant_types", "response_types", "contacts")
# What is kept is what is answered: a longer value is refused, never cut short.
CLIENT_NAME_MAX = 100
REGISTRATION_STRING_MAX = 2000
REGISTRATION_LIST_MAX = 10


def _fields_checked(body: dict[str, Any]) -> dict[str, Any]:
    """The fields this server understands, each of the type and size it keeps; the others
    are ignored (RFC 7591 §2), so they are neither kept nor answered."""
    if "jwks" in body:
        raise InvalidClientMetadataError("Public clients send no keys: leave out jwks.")
    known = {k: v for k, v in body.items() if k in REGISTRATION_LISTS + REGISTRATION_STRINGS}
    for name in REGISTRATION_LISTS:
        value = known.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidClientMetadataError(f"{name} must be a list of strings.")
        if not all(v.isprintable() for v in value):
            raise InvalidClientMetadataError(f"{name} must list printable text only.")
        if len(value) > REGISTRATION_LIST_MAX or any(
            len(v) > REGISTRATION_STRING_MAX for v in value
        ):
            raise InvalidClientMetadataError(
                f"{name} may list at most {REGISTRATION_LIST_MAX} values of at most "
                f"{REGISTRATION_STRING_MAX} characters."
            )
    for name in REGISTRATION_STRINGS:
        if not isinstance(known.get(name, ""), str):
            raise InvalidClientMetadataError(f"{name} must be a string.")
        # A NUL, a line break, a lone surrogate (the name is cleaned below, saying which).
        if name != "client_name" and not known.get(name, "").isprintable():
            raise InvalidClientMetadataError(f"{name} must be printable text.")
        if len(known.get(name, "")) > REGISTRATION_STRING_MAX:
            raise InvalidClientMetadataError(
                f"{name} must be at most {REGISTRATION_STRING_MAX} characters."
            )
    if "client_name" in known:
        try:
            known["client_name"] = clean_text(
                known["client_name"], "client_name", max_length=CLIENT_NAME_MAX
            )
        except InvalidInput as error:
            raise InvalidClientMetadataError(error_text(error.message)) from None
    return known


def registration_body(raw: bytes) -> dict[str, Any]:
    """The registration request's JSON, with the type of every field Authlib reads checked
    first (it trusts them), and the defaults of a connected app."""
    try:
        body = json.loads(raw or b"null")
    except (ValueError, RecursionError):
        raise InvalidClientMetadataError("The body must be a JSON object.") from None
    if not isinstance(body, dict):
        raise InvalidClientMetadataError("The body must be a JSON object.")
    body = _fields_checked(body)
    body.setdefault("token_endpoint_auth_method", "none")
    # RFC 7591's default is the code grant alone; a connected app always refreshes.
    body.setdefault("grant_types", ["authorization_code", "refresh_token"])
    if not body["grant_types"]:
        body["grant_types"] = list(APP_GRANT_TYPES)
    if unknown := set(body["grant_types"]) - set(APP_GRANT_TYPES):
        named = error_text(min(unknown))
        raise InvalidClientMetadataError(
            f"Only authorization_code and refresh_token may be registered, not {named}."
        )
    if "authorization_code" not in body["grant_types"]:
        raise InvalidClientMetadataError("grant_types must include authorization_code.")
    # RFC 7591 §3.2.1 lets the server replace what was asked: every connected app refreshes.
    body["grant_types"] = list(APP_GRANT_TYPES)
    return dict(body)


class RegistrationClaims(ClientMetadataClaims):
    """Authlib's checks of the metadata, but redirect addresses by this server's rule: native
    apps' own schemes are accepted (Authlib wants a host), and a refused address is
    `invalid_redirect_uri` naming it (RFC 7591 §3.2.2), not `invalid_client_metadata`."""

    def validate_redirect_uris(self) -> None:
        for uri in self.get("redirect_uris") or []:
            if problem := redirect_uri_problem(uri):
                raise InvalidRedirectURIError(error_text(problem))


class Registration(ClientRegistrationEndpoint):
    """POST /oauth/register (RFC 7591) for apps without a metadata document: public clients
    of the authorization code grant, no secret."""

    def __init__(self, request: HttpRequest) -> None:
        super().__init__(SERVER, claims_classes=[RegistrationClaims])
        self.http_request = request

    def create_endpoint_request(self, request: HttpRequest) -> Any:
        body = registration_body(request.body)
        json_request = SERVER.create_json_request(request)
        json_request.payload.data = body
        return json_request

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration, limited per address by the view

    def get_server_metadata(self) -> dict[str, Any]:
        return authorization_server_document(self.http_request)

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info = super().generate_client_info(request)
        info.pop("client_secret", None)  # a public client: nothing to keep secret
        info.pop("client_secret_expires_at", None)
        return dict(info)

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any
    ) -> OAuthClient:
        try:
            redirect_uris = redirect_uris_clean(client_metadata.get("redirect_uris"))
        except ValueError as error:
            raise InvalidRedirectURIError(error_text(str(error))) from None
        grant_types = client_metadata.get("grant_types") or ["authorization_code"]
        if "authorization_code" not in grant_types:
            raise InvalidClientMetadataError("grant_types must include authorization_code.")
        return OAuthClient.objects.create(
            client_id=client_info["client_id"],
            source=OAuthClient.Source.REGISTERED,
            client_name=client_name_clean(client_metadata.get("client_name"), "Unnamed app"),
            client_uri=str(client_metadata.get("client_uri") or ""),
            redirect_uris=redirect_uris,
            grant_types=[g for g in APP_GRANT_TYPES if g in grant_types],
            registered_ip=client_ip(self.http_request),
        )
