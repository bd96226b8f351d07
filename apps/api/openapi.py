"""Pieces of OpenAPI 3.1 that every door's description is built from: error answers in the
API's `{"error", "message"}` shape, OAuth's RFC 6749 errors, headers and bodies. Each app
describes its own endpoints with them, next to its code; config/openapi.py puts them together."""

import re
from typing import Any

from .scopes import ALL_SCOPES


def error_response(
    description: str, reasons: list[str], headers: dict[str, Any] | None = None
) -> dict[str, Any]:
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


def header(
    description: str, schema: dict[str, Any] | None = None, *, required: bool = True
) -> dict[str, Any]:
    return {
        "description": description,
        "required": required,
        "schema": schema or {"type": "string"},
    }


def json_body(ref: str) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": ref}}}}


def ok(description: str, ref: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": ref}}}}


def form_body(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"required": True, "content": {"application/x-www-form-urlencoded": {"schema": schema}}}


def oauth_error(codes: list[str], description: str = "") -> dict[str, Any]:
    return {
        "description": description or "RFC 6749 error; Cache-Control: no-store.",
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


def scope_list_pattern(scopes: tuple[str, ...] = ALL_SCOPES) -> str:
    one = "(" + "|".join(re.escape(scope) for scope in scopes) + ")"
    return f"^({one}( {one})*)?$"
