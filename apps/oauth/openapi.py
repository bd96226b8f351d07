"""How the authorization server's endpoints are described in their own OpenAPI document
(/oauth/openapi.json, at the origin, apart from the API's /api/v1): the device grant of
`gatehouse login`, registration, the token endpoint of every grant, revocation."""

from typing import Any

from apps.api.openapi import form_body, oauth_error, scope_list_pattern
from apps.api.scopes import EVERY_SCOPE

from .clients import CLI_CLIENT_ID as DEVICE_CLIENT_ID

TOKEN_ANSWER: dict[str, Any] = {
    "type": "object",
    "required": [
        "access_token",
        "token_type",
        "expires_in",
        "scope",
    ],
    "properties": {
        "access_token": {"type": "string"},
        "token_type": {"const": "Bearer"},
        "expires_in": {
            "type": "integer",
            "description": "7776000 (90 days) for the CLI's key, 3600 for a connected app's.",
        },
        "scope": {"type": "string"},
        "refresh_token": {
            "type": "string",
            "description": "A connected app's next refresh token (90 days, used once).",
        },
        "replaced_keys": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Hints of this installation's earlier CLI keys, revoked by this login.",
        },
    },
}


def device_grant_paths() -> dict[str, Any]:
    """The authorization server's endpoints for programs: `gatehouse login` and `logout`, and
    MCP clients'. /oauth/authorize is a page for people, like /device, and is not described."""
    return {
        "/oauth/device/code": device_code_path(),
        "/oauth/register": register_path(),
        "/oauth/token": token_path(),
        "/oauth/revoke": revoke_path(),
    }


def register_path() -> dict[str, Any]:
    """RFC 7591: dynamic registration of a public client."""
    uri = {
        "type": "string",
        "description": "https; http to 127.0.0.1, [::1] or localhost (any port, RFC 8252 "
        "§7.3); or a native app's own scheme (RFC 8252 §7.1), such as "
        "cursor://anysphere.cursor-mcp/oauth/callback or com.example.app:/callback. Schemes a "
        "browser runs or reads itself (javascript, data, file, blob, about, vbscript, "
        "filesystem, ws, wss, …) are refused with invalid_redirect_uri naming the address.",
        "pattern": r"^(https://[^/?#\s]+|http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?"
        r"|[a-z][a-z0-9+.\-]*:(//[^/?#\s]*)?)(/[^#\s]*)?$",
    }
    uris = {"type": "array", "items": uri, "minItems": 1, "maxItems": 10}
    metadata: dict[str, Any] = {
        "type": "object",
        "required": ["redirect_uris"],
        "properties": {
            "redirect_uris": uris,
            "client_name": {"type": "string", "maxLength": 100},
            "grant_types": {"type": "array", "items": {"type": "string"}},
            "response_types": {"type": "array", "items": {"type": "string"}},
            "token_endpoint_auth_method": {"type": "string", "enum": ["none"]},
            "scope": {"type": "string", "pattern": scope_list_pattern()},
        },
    }
    return {
        "post": {
            "operationId": "registerClient",
            "summary": "Register an MCP client without a client ID metadata document (RFC 7591).",
            "security": [],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": metadata}},
            },
            "responses": {
                "201": {
                    "description": "The client, public: a client_id and no secret.",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["client_id", "redirect_uris"],
                                "properties": {
                                    "client_id": {"type": "string"},
                                    **metadata["properties"],
                                },
                            }
                        }
                    },
                },
                "400": oauth_error(["invalid_client_metadata", "invalid_redirect_uri"]),
                "429": oauth_error(
                    ["temporarily_unavailable"],
                    "Too many registrations from this address; see Retry-After.",
                ),
            },
        },
    }


INVALID_DEVICE_REQUEST = [
    "invalid_client",
    "invalid_scope",
    "invalid_request",
    "unauthorized_client",
]


DEVICE_CODE_FIELDS: dict[str, Any] = {
    "client_id": {"type": "string", "enum": [DEVICE_CLIENT_ID]},
    "scope": {
        "type": "string",
        "description": "Space-separated scopes. When empty or left out, the approver may grant "
        "any but the keys scopes, starting from read-only.",
        "pattern": scope_list_pattern(EVERY_SCOPE),
    },
    # Lengths as sent, surrounding spaces included; the server also refuses what a name may
    # not hold (docs/product.md §3.3), which a pattern here would make too slow to generate.
    "installation_id": {
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "description": "The CLI's own extra (RFC 8628 needs only client_id and scope): a "
        "login from the same installation replaces its previous key. Left out, each login "
        "is a key of its own.",
    },
    "device_name": {
        "type": "string",
        "maxLength": 100,
        "description": "The key's name. Empty or left out: the client's name and the address "
        "the login came from.",
    },
}


def device_code_path() -> dict[str, Any]:
    """RFC 8628 §3.1: the CLI asks for a device code and a user code."""
    return {
        "post": {
            "operationId": "startDeviceLogin",
            "summary": "Start a CLI login (RFC 8628 device authorization request).",
            "security": [],
            "requestBody": form_body(DEVICE_CODE_FIELDS, ["client_id"]),
            "responses": {
                "200": {
                    "description": "The device code to poll with and the code to show.",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": [
                                    "device_code",
                                    "user_code",
                                    "verification_uri",
                                    "verification_uri_complete",
                                    "expires_in",
                                    "interval",
                                ],
                                "properties": {
                                    "device_code": {"type": "string"},
                                    "user_code": {
                                        "type": "string",
                                        "pattern": "^[BCDFGHJKLMNPQRSTVWXZ]{4}-"
                                        "[BCDFGHJKLMNPQRSTVWXZ]{4}$",
                                    },
                                    "verification_uri": {"type": "string"},
                                    "verification_uri_complete": {"type": "string"},
                                    "expires_in": {"type": "integer"},
                                    "interval": {"type": "integer"},
                                },
                            }
                        }
                    },
                },
                "401": oauth_error(
                    ["invalid_client"],
                    "Client credentials in an Authorization header (Basic): clients here are "
                    "public and send client_id in the form; with WWW-Authenticate: Basic.",
                ),
                "400": oauth_error(INVALID_DEVICE_REQUEST),
                "429": oauth_error(
                    ["slow_down"], "Too many login requests from this address; see Retry-After."
                ),
            },
        },
    }


def token_path() -> dict[str, Any]:
    """RFC 8628 §3.4: the CLI polls for its key."""
    return {
        "post": {
            "operationId": "requestToken",
            "summary": "Exchange a grant for a key: the CLI's device code (RFC 8628), a connected "
            "app's authorization code with its PKCE verifier, or its refresh token.",
            "security": [],
            "requestBody": form_body(
                {
                    "grant_type": {
                        "type": "string",
                        "enum": [
                            "urn:ietf:params:oauth:grant-type:device_code",
                            "authorization_code",
                            "refresh_token",
                        ],
                    },
                    "device_code": {"type": "string"},
                    "code": {"type": "string"},
                    "code_verifier": {"type": "string"},
                    "redirect_uri": {"type": "string"},
                    "refresh_token": {"type": "string"},
                    "resource": {"type": "string"},
                    "client_id": {"type": "string", "enum": [DEVICE_CLIENT_ID]},
                },
                ["grant_type", "client_id"],
            ),
            "responses": {
                "200": {
                    "description": "The key: tagged CLI for 90 days, or tagged MCP for an hour.",
                    "content": {"application/json": {"schema": TOKEN_ANSWER}},
                },
                "401": oauth_error(
                    ["invalid_client"],
                    "Client credentials in an Authorization header (Basic): clients here are "
                    "public and send client_id in the form; with WWW-Authenticate: Basic.",
                ),
                "400": oauth_error(
                    [
                        "authorization_pending",
                        "slow_down",
                        "access_denied",
                        "expired_token",
                        "invalid_grant",
                        "invalid_client",
                        "invalid_request",
                        "invalid_scope",
                        "invalid_target",
                        "unauthorized_client",
                        "unsupported_grant_type",
                    ]
                ),
            },
        },
    }


def revoke_path() -> dict[str, Any]:
    """RFC 7009: `gatehouse logout` revokes its key."""
    return {
        "post": {
            "operationId": "revokeToken",
            "summary": "Revoke a key by its secret (RFC 7009): what `gatehouse logout` does.",
            "description": "Holding a secret is enough to revoke its key. A secret replaced "
            "by a roll revokes the key while its grace lasts. An unknown or already revoked "
            "token is answered the same way, as RFC 7009 asks.",
            "security": [],
            "requestBody": form_body(
                {
                    "token": {"type": "string", "description": "The secret to revoke."},
                    "token_type_hint": {"type": "string"},
                    "client_id": {
                        "type": "string",
                        "description": "The client the token was issued to; leave it out to "
                        "revoke a key by its secret.",
                    },
                },
                ["token"],
            ),
            "responses": {
                "200": {
                    "description": "Revoked, or nothing to revoke: an empty object.",
                    "content": {
                        "application/json": {"schema": {"type": "object", "maxProperties": 0}}
                    },
                },
                "401": oauth_error(
                    ["invalid_client"],
                    "Client credentials in an Authorization header (Basic): clients here are "
                    "public and send client_id in the form; with WWW-Authenticate: Basic.",
                ),
                "400": oauth_error(
                    ["invalid_request", "invalid_client"],
                    "No token was sent, or an unknown client_id.",
                ),
            },
        },
    }
