"""How the device endpoints of `gatehouse login` are described in the OpenAPI document."""

from typing import Any

from apps.api.openapi import form_body, oauth_error, scope_list_pattern

from .services import CLIENT_ID as DEVICE_CLIENT_ID

ROOT = [{"url": "/"}]  # outside /api/v1


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
        "expires_in": {"const": 7776000},
        "scope": {"type": "string"},
        "replaced_keys": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Hints of this installation's earlier CLI keys, revoked by this login.",
        },
    },
}


def device_grant_paths() -> dict[str, Any]:
    """The OAuth endpoints of `gatehouse login` and `gatehouse logout`."""
    return {
        "/oauth/device/code": device_code_path(),
        "/oauth/token": token_path(),
        "/oauth/revoke": revoke_path(),
    }


def device_code_path() -> dict[str, Any]:
    """RFC 8628 §3.1: the CLI asks for a device code and a user code."""
    return {
        "servers": ROOT,
        "post": {
            "operationId": "startDeviceLogin",
            "summary": "Start a CLI login (RFC 8628 device authorization request).",
            "security": [],
            "requestBody": form_body(
                {
                    "client_id": {"type": "string", "enum": [DEVICE_CLIENT_ID]},
                    "scope": {
                        "type": "string",
                        "description": "Space-separated scopes. When empty or left out, "
                        "the approver may grant any, starting from read-only.",
                        "pattern": scope_list_pattern(),
                    },
                    "installation_id": {"type": "string", "minLength": 1, "maxLength": 64},
                    "device_name": {"type": "string", "maxLength": 100},
                },
                ["client_id", "installation_id"],
            ),
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
                "400": oauth_error(["invalid_client", "invalid_scope", "invalid_request"]),
                "429": oauth_error(
                    ["slow_down"], "Too many login requests from this address; see Retry-After."
                ),
            },
        },
    }


def token_path() -> dict[str, Any]:
    """RFC 8628 §3.4: the CLI polls for its key."""
    return {
        "servers": ROOT,
        "post": {
            "operationId": "pollDeviceLogin",
            "summary": "Poll for the CLI's key (RFC 8628 device access token request).",
            "security": [],
            "requestBody": form_body(
                {
                    "grant_type": {
                        "type": "string",
                        "enum": ["urn:ietf:params:oauth:grant-type:device_code"],
                    },
                    "device_code": {"type": "string"},
                    "client_id": {"type": "string", "enum": [DEVICE_CLIENT_ID]},
                },
                ["grant_type", "device_code", "client_id"],
            ),
            "responses": {
                "200": {
                    "description": "The new key, tagged CLI, 90 days.",
                    "content": {"application/json": {"schema": TOKEN_ANSWER}},
                },
                "400": oauth_error(
                    [
                        "authorization_pending",
                        "slow_down",
                        "access_denied",
                        "expired_token",
                        "invalid_grant",
                        "invalid_client",
                        "invalid_request",
                        "unsupported_grant_type",
                    ]
                ),
            },
        },
    }


def revoke_path() -> dict[str, Any]:
    """RFC 7009: `gatehouse logout` revokes its key."""
    return {
        "servers": ROOT,
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
                "400": oauth_error(["invalid_request"], "No token was sent."),
            },
        },
    }
