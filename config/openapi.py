"""The OpenAPI 3.1 description of the API, built from the operations list.

`manage.py openapi --write` regenerates `config/openapi.json`, the copy kept in the repository
and served at /api/v1/openapi.json; a test fails when the two drift apart.
"""

import json
import re
from pathlib import Path
from typing import Any

from apps.api.errors import STATUS_BY_REASON
from apps.api.operations import Operation
from apps.api.scopes import ALL_SCOPES
from apps.devices.services import CLIENT_ID as DEVICE_CLIENT_ID

from .operations import OPERATIONS

OPENAPI_FILE = Path(__file__).with_name("openapi.json")


def _error_response(description: str, reasons: list[str], headers: dict | None = None) -> dict:
    response: dict[str, Any] = {
        "description": description,
        "content": {
            "application/json": {
                "schema": {
                    "allOf": [
                        {"$ref": "#/components/schemas/Error"},
                        {"properties": {"error": {"enum": reasons}}},
                    ]
                }
            }
        },
    }
    if headers:
        response["headers"] = headers
    return response


def _header(description: str, schema: dict | None = None, *, required: bool = True) -> dict:
    return {
        "description": description,
        "required": required,
        "schema": schema or {"type": "string"},
    }


def _json_body(ref: str) -> dict:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": ref}}}}


def _ok(description: str, ref: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": ref}}}}


def build_openapi() -> dict[str, Any]:
    www_authenticate = _header('The RFC 6750 challenge, e.g. Bearer realm="api".')
    responses = {
        "Unauthorized": _error_response(
            "No key, or a key that is malformed, unknown, expired or revoked.",
            ["missing-key", "invalid-key", "expired-key", "revoked-key"],
            {"WWW-Authenticate": www_authenticate},
        ),
        "Forbidden": _error_response(
            "The key lacks the scope the operation needs (member keys on workspace endpoints), "
            "or its holder lacks the role; or, in production, the request came over plain HTTP "
            "(https-required: treat the key as exposed).",
            ["insufficient-scope", "insufficient-role", "https-required"],
            {
                "WWW-Authenticate": _header(
                    'With insufficient-scope: Bearer realm="api", error="insufficient_scope", '
                    'scope="<the scopes that would do>".',
                    required=False,
                )
            },
        ),
        "InvalidInput": _error_response(
            "The body or a parameter is not valid; the message names the field.",
            ["invalid-input"],
        ),
        "PayloadTooLarge": _error_response(
            "The body is over the size limit (65,536 bytes by default).", ["payload-too-large"]
        ),
        "UnsupportedMediaType": _error_response(
            "A body was sent without Content-Type: application/json.", ["unsupported-media-type"]
        ),
        "NotFound": _error_response(
            "No such object for this key: it does not exist, belongs to another workspace, or "
            "is a community the member is not in.",
            ["not-found"],
        ),
        "RateLimited": _error_response(
            "Over the per-key rate limit (1,000 requests a minute by default).",
            ["rate-limited"],
            {
                "Retry-After": _header(
                    "Seconds to wait.", {"type": "string", "pattern": "^[0-9]+$"}
                ),
                "RateLimit-Policy": _header('The policy, e.g. "default";q=1000;w=60.'),
                "RateLimit": _header('What is left, e.g. "default";r=0;t=12.'),
            },
        ),
    }

    codes = {
        "Unauthorized": "401",
        "Forbidden": "403",
        "InvalidInput": "400",
        "PayloadTooLarge": "413",
        "UnsupportedMediaType": "415",
        "NotFound": "404",
        "RateLimited": "429",
    }
    schemas: dict[str, Any] = {
        "Error": {
            "type": "object",
            "additionalProperties": False,
            "required": ["error", "message"],
            "properties": {
                "error": {"type": "string", "enum": sorted(STATUS_BY_REASON)},
                "message": {"type": "string"},
            },
        }
    }
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        schemas[op.output_name] = op.output
        names = ["Unauthorized", "Forbidden", "RateLimited"]
        if op.params or op.body is not None:
            names.append("InvalidInput")
        if op.body is not None:
            names += ["PayloadTooLarge", "UnsupportedMediaType"]
        if op.can_be_not_found:
            names.append("NotFound")
        operation: dict[str, Any] = {
            "operationId": op.operation_id,
            "summary": op.title,
            "description": f"{op.summary}\n\n{needs_sentence(op)}",
        }
        if op.params:
            operation["parameters"] = [
                {
                    "name": param.name,
                    "in": param.location,
                    "required": param.required,
                    "description": param.description,
                    "schema": {k: v for k, v in param.schema.items() if k != "description"},
                }
                for param in op.params
            ]
        if op.body is not None:
            schemas[op.body_name] = op.body
            operation["requestBody"] = _json_body(f"#/components/schemas/{op.body_name}")
        operation["responses"] = {
            str(op.status): _ok(
                op.title + ": the result.", f"#/components/schemas/{op.output_name}"
            ),
            **{codes[name]: {"$ref": f"#/components/responses/{name}"} for name in sorted(names)},
        }
        paths.setdefault(op.path, {})[op.method.lower()] = operation
    paths.update(device_grant_paths())
    paths.update(secret_scanning_paths())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Gatehouse workspace API",
            "version": "1.0.0",
            "description": (
                "The workspace API of a course, product and community platform. Every request "
                "carries `Authorization: Bearer <key>`; the key names the caller and the "
                "workspace. Every response, errors included, is JSON. The same operations are "
                "MCP tools at /mcp, named like the operationIds in snake_case."
            ),
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearerAuth": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A key from the dashboard, the CLI or createapikey.",
                }
            },
            "responses": responses,
            "schemas": schemas,
        },
    }


def _form_body(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"required": True, "content": {"application/x-www-form-urlencoded": {"schema": schema}}}


def _oauth_error(codes: list[str]) -> dict[str, Any]:
    return {
        "description": "RFC 6749 error; Cache-Control: no-store.",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {"type": "string", "enum": codes},
                        "error_description": {"type": "string"},
                    },
                }
            }
        },
    }


def _scope_list_pattern() -> str:
    one = "(" + "|".join(re.escape(scope) for scope in ALL_SCOPES) + ")"
    return f"^({one}( {one})*)?$"


def secret_scanning_paths() -> dict[str, Any]:
    """GitHub's secret-scanning partner endpoint: signed reports of leaked keys."""
    item = {
        "type": "object",
        "required": ["token"],
        "properties": {
            "token": {"type": "string", "description": "The string found."},
            "type": {"type": "string", "description": "The secret type registered with GitHub."},
            "url": {"type": "string", "description": "Where it was found."},
            "source": {"type": "string", "description": "e.g. content, commit, issue."},
        },
    }
    verdict = {
        "type": "object",
        "required": ["token_hash", "token_type", "label"],
        "properties": {
            "token_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "token_type": {"type": "string"},
            "label": {"enum": ["true_positive", "false_positive"]},
        },
    }
    signature_headers = [
        {
            "name": "Github-Public-Key-Identifier",
            "in": "header",
            "required": True,
            "schema": {"type": "string"},
            "description": "Which of GitHub's secret-scanning public keys signed the body.",
        },
        {
            "name": "Github-Public-Key-Signature",
            "in": "header",
            "required": True,
            "schema": {"type": "string"},
            "description": "Base64 ECDSA P-256 SHA-256 signature of the raw body.",
        },
    ]
    return {
        "/secret-scanning/reports": {
            "post": {
                "operationId": "reportLeakedKeys",
                "summary": "Report leaked keys (GitHub secret scanning partner program)",
                "description": "Every reported key that is active is revoked at once, audited "
                "as key.leaked with the URL, and its holder is e-mailed. Unknown tokens are "
                "labelled false_positive and change nothing; so does a repeated report. "
                "Authenticated by the signature, not by a key.",
                "security": [],
                "parameters": signature_headers,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"type": "array", "maxItems": 1000, "items": item}
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "One verdict per reported token.",
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": verdict}}
                        },
                    },
                    "400": {"$ref": "#/components/responses/InvalidInput"},
                    "403": _error_response(
                        "A missing, forged or no longer current signature; nothing is revoked.",
                        ["invalid-signature"],
                    ),
                    "413": {"$ref": "#/components/responses/PayloadTooLarge"},
                },
            }
        }
    }


def device_grant_paths() -> dict[str, Any]:
    """The two OAuth endpoints of `gatehouse login` (RFC 8628), outside /api/v1."""
    root = [{"url": "/"}]
    return {
        "/oauth/device/code": {
            "servers": root,
            "post": {
                "operationId": "startDeviceLogin",
                "summary": "Start a CLI login (RFC 8628 device authorization request).",
                "security": [],
                "requestBody": _form_body(
                    {
                        "client_id": {"type": "string", "enum": [DEVICE_CLIENT_ID]},
                        "scope": {
                            "type": "string",
                            "description": "Space-separated scopes; all when empty or left out.",
                            "pattern": _scope_list_pattern(),
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
                    "400": _oauth_error(["invalid_client", "invalid_scope", "invalid_request"]),
                },
            },
        },
        "/oauth/token": {
            "servers": root,
            "post": {
                "operationId": "pollDeviceLogin",
                "summary": "Poll for the CLI's key (RFC 8628 device access token request).",
                "security": [],
                "requestBody": _form_body(
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
                        "content": {
                            "application/json": {
                                "schema": {
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
                                    },
                                }
                            }
                        },
                    },
                    "400": _oauth_error(
                        [
                            "authorization_pending",
                            "slow_down",
                            "access_denied",
                            "expired_token",
                            "invalid_grant",
                            "invalid_client",
                        ]
                    ),
                },
            },
        },
    }


def needs_sentence(op: Operation) -> str:
    """What the operation asks of a key, in one sentence."""
    needs = op.needs
    if needs.any_write:
        text = "Needs a workspace key with at least one :write scope"
    elif needs.scope:
        text = f"Needs the {needs.scope} scope"
    else:
        text = "Any active workspace key, whatever its scopes"
    if needs.role:
        text += f", held by a workspace {needs.role} (otherwise 403 insufficient-role)"
    if needs.members:
        text += "; member keys are accepted and act as their member"
    return text + "."


def render_openapi() -> str:
    return json.dumps(build_openapi(), indent=2, ensure_ascii=False) + "\n"
