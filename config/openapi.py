"""The OpenAPI 3.1 description of the API, built from the operations list.

`manage.py openapi --write` regenerates `config/openapi.json`, the copy kept in the repository
and served at /api/v1/openapi.json; a test fails when the two drift apart.
"""

import json
from pathlib import Path
from typing import Any

from apps.api.errors import STATUS_BY_REASON
from apps.api.operations import Operation

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


def _header(description: str, schema: dict | None = None) -> dict:
    return {"description": description, "required": True, "schema": schema or {"type": "string"}}


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
            "or its holder lacks the role.",
            ["insufficient-scope", "insufficient-role"],
            {"WWW-Authenticate": www_authenticate},
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
            {"Retry-After": _header("Seconds to wait.", {"type": "string", "pattern": "^[0-9]+$"})},
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
