"""The OpenAPI 3.1 description of the API, built from the operations list and the endpoints
each app describes beside its own code (the device login, the leak reports).

Served at /api/v1/openapi.json, built once per process with this server's limits in it.
`manage.py openapi --write` regenerates `config/openapi.json`, the copy in the repository (with
the default settings); a test fails when it drifts from the code.
"""

import functools
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from apps.api.errors import STATUS_BY_REASON
from apps.api.openapi import error_response, header, json_body, ok
from apps.api.operations import Operation
from apps.leaks.openapi import secret_scanning_paths
from apps.oauth.openapi import device_grant_paths

from .operations import OPERATIONS

OPENAPI_FILE = Path(__file__).with_name("openapi.json")
OAUTH_OPENAPI_FILE = Path(__file__).with_name("oauth-openapi.json")


CODES = {
    "Unauthorized": "401",
    "Forbidden": "403",
    "InvalidInput": "400",
    "PayloadTooLarge": "413",
    "UriTooLong": "414",
    "UnsupportedMediaType": "415",
    "NotFound": "404",
    "Conflict": "409",
    "RateLimited": "429",
    "Unavailable": "503",
}


def shared_responses() -> dict[str, Any]:
    """The error answers operations share, by name; limits as this server sets them."""
    www_authenticate = header('The RFC 6750 challenge, e.g. Bearer realm="api".')
    limit = settings.API_RATE_LIMIT_PER_MINUTE
    return {
        "Unauthorized": error_response(
            "No key, or a key that is malformed, unknown, expired or revoked; a key that waits "
            "for an owner's approval (pending-key) or that an owner denied (denied-key); a key "
            "whose holder the workspace's identity provider suspended (suspended-key).",
            [
                "missing-key",
                "invalid-key",
                "expired-key",
                "revoked-key",
                "pending-key",
                "denied-key",
                "suspended-key",
            ],
            {"WWW-Authenticate": www_authenticate},
        ),
        "Forbidden": error_response(
            "The key lacks the scope the operation needs (member keys on workspace endpoints, "
            "creating in a group the key is limited to selected objects of), or its holder "
            "lacks the role; the key allows only some networks and the request came from "
            "another (ip-not-allowed); or, in production, the request came over plain HTTP "
            "(https-required: treat the key as exposed).",
            ["insufficient-scope", "insufficient-role", "ip-not-allowed", "https-required"],
            {
                "WWW-Authenticate": header(
                    'With insufficient-scope: Bearer realm="api", error="insufficient_scope", '
                    'scope="<the scopes that would do>".',
                    required=False,
                )
            },
        ),
        "InvalidInput": error_response(
            "The body or a parameter is not valid; the message names the field.",
            ["invalid-input"],
        ),
        "PayloadTooLarge": error_response(
            f"The body is over this server's limit of {settings.API_MAX_BODY_BYTES:,} bytes.",
            ["payload-too-large"],
        ),
        "UriTooLong": error_response(
            "The address (path and query string) is over the server's limit of 8,190 "
            "characters for the request line.",
            ["uri-too-long"],
        ),
        "UnsupportedMediaType": error_response(
            "A body was sent without Content-Type: application/json.", ["unsupported-media-type"]
        ),
        "NotFound": error_response(
            "No such object for this key: it does not exist, belongs to another workspace, or "
            "is a community the member is not in.",
            ["not-found"],
        ),
        "Conflict": error_response(
            "The object is not in a state the operation applies to: approving or denying a key "
            "that does not wait for approval.",
            ["conflict"],
        ),
        "RateLimited": error_response(
            f"Over the key's rate limit: its own, or on this server {limit:,} requests a "
            "minute by default.",
            ["rate-limited"],
            {
                "Retry-After": header(
                    "Seconds to wait.", {"type": "string", "pattern": "^[0-9]+$"}
                ),
                "RateLimit-Policy": header(f'The policy, e.g. "default";q={limit};w=60.'),
                "RateLimit": header('What is left, e.g. "default";r=0;t=12.'),
            },
        ),
        "Unavailable": error_response(
            "The database dropped the connection and one retry on a fresh connection failed "
            "too (nothing was changed), or it dropped as the change was committed (the message "
            "says so: it may or may not have been made; read it back). Try again after "
            "Retry-After.",
            ["unavailable"],
            {"Retry-After": header("Seconds to wait.", {"type": "string", "pattern": "^[0-9]+$"})},
        ),
    }


ERROR_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string", "enum": sorted(STATUS_BY_REASON)},
        "message": {"type": "string"},
    },
}


def operation_entry(op: Operation, schemas: dict[str, Any]) -> dict[str, Any]:
    """One operation's OpenAPI entry; its schemas are added to `schemas`."""
    names = ["Unauthorized", "Forbidden", "RateLimited", "Unavailable"]
    if op.params or op.body is not None:
        names.append("InvalidInput")
    if any(param.location == "query" for param in op.params):
        names.append("UriTooLong")
    if op.body is not None:
        names += ["PayloadTooLarge", "UnsupportedMediaType"]
    if op.can_be_not_found:
        names.append("NotFound")
    if op.can_conflict:
        names.append("Conflict")
    entry: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.title,
        "description": f"{op.summary}\n\n{needs_sentence(op)}",
    }
    if op.params:
        entry["parameters"] = [
            {
                "name": param.name,
                "in": param.location,
                "required": param.required,
                "description": param.description,
                "schema": {k: v for k, v in param.schema.items() if k != "description"},
            }
            for param in op.params
        ]
    if op.body is not None and op.body_name is not None:
        schemas[op.body_name] = op.body
        entry["requestBody"] = json_body(f"#/components/schemas/{op.body_name}")
    if op.status == 204:
        answer: dict[str, Any] = {"description": op.title + ": done; no content."}
    else:
        answer = ok(op.title + ": the result.", f"#/components/schemas/{op.output_name}")
        schemas[op.output_name] = op.output
    entry["responses"] = {
        str(op.status): answer,
        **{CODES[name]: {"$ref": f"#/components/responses/{name}"} for name in sorted(names)},
    }
    return entry


def build_openapi() -> dict[str, Any]:
    schemas: dict[str, Any] = {"Error": ERROR_SCHEMA}
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method.lower()] = operation_entry(op, schemas)
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
            "responses": shared_responses(),
            "schemas": schemas,
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
    if needs.roles:
        held_by = " or ".join(needs.roles)
        text += f", held by a workspace {held_by} (otherwise 403 insufficient-role)"
    if needs.creates:
        text += (
            f"; a key limited to selected {needs.creates} may not create one "
            "(403 insufficient-scope)"
        )
    if needs.members:
        text += "; member keys are accepted and act as their member"
    return text + "."


def build_oauth_openapi() -> dict[str, Any]:
    """The authorization server's endpoints for programs, in a document of their own: they
    live at the origin, not under the API's /api/v1, and take forms rather than JSON (a
    generated API client that read them under the API's `servers` would call the wrong
    address). Clients find them through /.well-known/oauth-authorization-server."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Gatehouse authorization server",
            "version": "1.0.0",
            "description": (
                "OAuth 2.1 for MCP clients and the device grant of `gatehouse login`, as "
                "/.well-known/oauth-authorization-server describes them (RFC 8414). Errors "
                "follow RFC 6749 §5.2."
            ),
        },
        "servers": [{"url": "/"}],
        "paths": device_grant_paths(),
    }


def render_openapi() -> str:
    return json.dumps(build_openapi(), indent=2, ensure_ascii=False) + "\n"


def render_oauth_openapi() -> str:
    return json.dumps(build_oauth_openapi(), indent=2, ensure_ascii=False) + "\n"


@functools.cache
def served_openapi() -> bytes:
    """The document this server serves: built once per process, with its own limits."""
    return render_openapi().encode()


@functools.cache
def served_oauth_openapi() -> bytes:
    return render_oauth_openapi().encode()


@require_GET
def oauth_openapi(request: HttpRequest) -> HttpResponse:
    """GET /oauth/openapi.json: the authorization server's endpoints, readable from any page."""
    response = HttpResponse(served_oauth_openapi(), content_type="application/json")
    response["Access-Control-Allow-Origin"] = "*"
    return response
