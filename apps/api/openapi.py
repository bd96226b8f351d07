"""The OpenAPI 3.1 description of the API, built from the same lists the validators use.

`manage.py openapi --write` regenerates `apps/api/openapi.json`, the copy kept in the repository
and served at /api/v1/openapi.json; a test fails when the two drift apart.
"""

import json
from pathlib import Path
from typing import Any

from apps.api.errors import STATUS_BY_REASON
from apps.api.listing import MAX_LIMIT
from apps.api_keys.scopes import ALL_SCOPES
from apps.communities.services import POST_BODY_MAX_LENGTH
from apps.pages.services import BODY_MAX_LENGTH as PAGE_BODY_MAX_LENGTH
from apps.products.services import MAX_PRICE_CENTS
from apps.workspaces.choices import TRANSCRIPTION_LANGUAGES
from apps.workspaces.validators import timezone_names

OPENAPI_FILE = Path(__file__).with_name("openapi.json")

# Characters the API refuses in names: controls (lone surrogates too, which JSON Schema regexes
# cannot express and which no client sends by accident).
_BAD = r"\u0000-\u001f\u007f-\u009f"


def single_line_text(max_length: int) -> dict[str, Any]:
    """A name as clean_text() accepts it: 1..max_length characters once trimmed."""
    return {
        "type": "string",
        "pattern": (
            rf"^[^\S{_BAD}]*[^\s{_BAD}](?:[^{_BAD}]{{0,{max_length - 2}}}[^\s{_BAD}])?[^\S{_BAD}]*$"
        ),
        "description": f"1 to {max_length} characters after trimming; no control characters.",
    }


def long_text(max_length: int, *, required: bool = True) -> dict[str, Any]:
    """A body text as clean_long_text() accepts it: at most max_length characters, newlines and
    tabs allowed, other control characters not; when required, not blank."""
    allowed = r"[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]"
    visible = r"[^\s\u0000-\u001f\u007f-\u009f]"
    pattern = rf"^{allowed}*{visible}{allowed}*$" if required else rf"^{allowed}*$"
    return {
        "type": "string",
        "maxLength": max_length,
        "pattern": pattern,
        "description": f"Up to {max_length} characters; newlines allowed"
        + ("." if not required else "; not blank."),
    }


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
            "The key lacks the scope the operation needs (member keys on workspace endpoints).",
            ["insufficient-scope"],
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

    def refs(*names: str) -> dict[str, dict]:
        codes = {
            "Unauthorized": "401",
            "Forbidden": "403",
            "InvalidInput": "400",
            "PayloadTooLarge": "413",
            "UnsupportedMediaType": "415",
            "NotFound": "404",
            "RateLimited": "429",
        }
        return {codes[name]: {"$ref": f"#/components/responses/{name}"} for name in names}

    read_errors = refs("Unauthorized", "Forbidden", "RateLimited")
    write_errors = refs(
        "InvalidInput",
        "Unauthorized",
        "Forbidden",
        "PayloadTooLarge",
        "UnsupportedMediaType",
        "RateLimited",
    )
    workspace_record = {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "workspaceId",
            "workspaceName",
            "userEmail",
            "scopes",
            "timezone",
            "autoTranscribeUploads",
            "transcriptionLanguage",
        ],
        "properties": {
            "workspaceId": {"type": "string", "format": "uuid"},
            "workspaceName": {"type": "string"},
            "userEmail": {"type": "string", "format": "email"},
            "scopes": {
                "type": "array",
                "items": {"type": "string", "enum": list(ALL_SCOPES)},
                "uniqueItems": True,
                "minItems": 1,
            },
            "timezone": {"type": "string"},
            "autoTranscribeUploads": {"type": "boolean"},
            "transcriptionLanguage": {"type": "string"},
        },
    }
    workspace_patch = {
        "type": "object",
        "description": (
            "At least one settable field; all are validated before any is written. "
            "videoSettings, read-only fields and unknown fields are refused with invalid-input: "
            "the default video quality can be changed only in the dashboard."
        ),
        "minProperties": 1,
        "additionalProperties": False,
        "properties": {
            "workspaceName": single_line_text(100),
            "timezone": {
                "type": "string",
                "description": "An IANA time zone name as zoneinfo spells it.",
                "enum": sorted(timezone_names()),
            },
            "autoTranscribeUploads": {"type": "boolean"},
            "transcriptionLanguage": {
                "type": "string",
                "description": "A supported ISO 639-1 code.",
                "enum": list(TRANSCRIPTION_LANGUAGES),
            },
        },
    }
    product = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "name", "priceCents", "createdAt"],
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "priceCents": {"type": "integer", "minimum": 0},
            "createdAt": {"type": "string", "format": "date-time"},
        },
    }
    product_create = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "priceCents"],
        "properties": {
            "name": single_line_text(200),
            "priceCents": {"type": "integer", "minimum": 0, "maximum": MAX_PRICE_CENTS},
        },
    }

    def created_list(item_ref: str) -> dict:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": ["data"],
            "properties": {"data": {"type": "array", "items": {"$ref": item_ref}}},
        }

    def record(properties: dict[str, dict]) -> dict:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": list(properties),
            "properties": properties,
        }

    community = record(
        {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "createdAt": {"type": "string", "format": "date-time"},
        }
    )
    post = record(
        {
            "id": {"type": "integer"},
            "communityId": {"type": "integer"},
            "title": {"type": "string"},
            "body": {"type": "string"},
            "authorEmail": {"type": "string", "format": "email"},
            "createdAt": {"type": "string", "format": "date-time"},
        }
    )
    post_create = {
        "type": "object",
        "additionalProperties": False,
        "required": ["title", "body"],
        "properties": {"title": single_line_text(200), "body": long_text(POST_BODY_MAX_LENGTH)},
    }
    page = record(
        {
            "id": {"type": "integer"},
            "title": {"type": "string"},
            "slug": {"type": "string"},
            "body": {"type": "string"},
            "createdAt": {"type": "string", "format": "date-time"},
        }
    )
    page_create = {
        "type": "object",
        "additionalProperties": False,
        "required": ["title", "slug", "body"],
        "properties": {
            "title": single_line_text(200),
            "slug": {
                "type": "string",
                "pattern": "^[a-z0-9]+(?:-[a-z0-9]+)*$",
                "maxLength": 100,
                "description": "Unique in the workspace; a used slug is refused (invalid-input).",
            },
            "body": long_text(PAGE_BODY_MAX_LENGTH, required=False),
        },
    }
    community_id = {
        "name": "communityId",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
    }
    limit = {
        "name": "limit",
        "in": "query",
        "required": False,
        "description": f"How many items to return, newest first (default 50, at most {MAX_LIMIT}).",
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Gatehouse workspace API",
            "version": "1.0.0",
            "description": (
                "The workspace API of a course, product and community platform. Every request "
                "carries `Authorization: Bearer <key>`; the key names the caller and the "
                "workspace. Every response, errors included, is JSON."
            ),
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearerAuth": []}],
        "paths": {
            "/workspace": {
                "get": {
                    "operationId": "getWorkspace",
                    "summary": "Confirm a key works and read its workspace record.",
                    "description": "Any active workspace key, whatever its scopes.",
                    "responses": {
                        "200": _ok("The workspace record.", "#/components/schemas/Workspace"),
                        **read_errors,
                    },
                },
                "patch": {
                    "operationId": "updateWorkspace",
                    "summary": "Change workspace settings or rename the workspace.",
                    "description": "Needs a workspace key with at least one :write scope.",
                    "requestBody": _json_body("#/components/schemas/WorkspacePatch"),
                    "responses": {
                        "200": _ok("The updated record.", "#/components/schemas/Workspace"),
                        **write_errors,
                    },
                },
            },
            "/communities": {
                "get": {
                    "operationId": "listCommunities",
                    "summary": "List communities: all of the workspace's, or a member's own.",
                    "description": "Needs communities:read; member keys welcome.",
                    "parameters": [limit],
                    "responses": {
                        "200": _ok("The communities.", "#/components/schemas/CommunityList"),
                        **refs("InvalidInput"),
                        **read_errors,
                    },
                },
            },
            "/communities/{communityId}/posts": {
                "parameters": [community_id],
                "get": {
                    "operationId": "listPosts",
                    "summary": "List a community's posts, newest first.",
                    "description": "Needs communities:read; member keys only in their communities.",
                    "parameters": [limit],
                    "responses": {
                        "200": _ok("The posts.", "#/components/schemas/PostList"),
                        **refs("InvalidInput", "NotFound"),
                        **read_errors,
                    },
                },
                "post": {
                    "operationId": "createPost",
                    "summary": "Post in a community; the author is the key's user.",
                    "description": "Needs communities:write; member keys: their communities only.",
                    "requestBody": _json_body("#/components/schemas/PostCreate"),
                    "responses": {
                        "201": _ok("The new post.", "#/components/schemas/Post"),
                        **refs("NotFound"),
                        **write_errors,
                    },
                },
            },
            "/pages": {
                "get": {
                    "operationId": "listPages",
                    "summary": "List the workspace's pages, newest first.",
                    "description": "Needs pages:read.",
                    "parameters": [limit],
                    "responses": {
                        "200": _ok("The pages.", "#/components/schemas/PageList"),
                        **refs("InvalidInput"),
                        **read_errors,
                    },
                },
                "post": {
                    "operationId": "createPage",
                    "summary": "Create a page.",
                    "description": "Needs pages:write.",
                    "requestBody": _json_body("#/components/schemas/PageCreate"),
                    "responses": {
                        "201": _ok("The new page.", "#/components/schemas/Page"),
                        **write_errors,
                    },
                },
            },
            "/products": {
                "get": {
                    "operationId": "listProducts",
                    "summary": "List the workspace's products, newest first.",
                    "description": "Needs products:read.",
                    "parameters": [limit],
                    "responses": {
                        "200": _ok("The products.", "#/components/schemas/ProductList"),
                        **refs("InvalidInput"),
                        **read_errors,
                    },
                },
                "post": {
                    "operationId": "createProduct",
                    "summary": "Create a product.",
                    "description": "Needs products:write.",
                    "requestBody": _json_body("#/components/schemas/ProductCreate"),
                    "responses": {
                        "201": _ok("The new product.", "#/components/schemas/Product"),
                        **write_errors,
                    },
                },
            },
        },
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key created in the dashboard or by createapikey.",
                }
            },
            "responses": responses,
            "schemas": {
                "Error": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["error", "message"],
                    "properties": {
                        "error": {"type": "string", "enum": sorted(STATUS_BY_REASON)},
                        "message": {"type": "string"},
                    },
                },
                "Workspace": workspace_record,
                "WorkspacePatch": workspace_patch,
                "Product": product,
                "ProductCreate": product_create,
                "ProductList": created_list("#/components/schemas/Product"),
                "Community": community,
                "CommunityList": created_list("#/components/schemas/Community"),
                "Post": post,
                "PostCreate": post_create,
                "PostList": created_list("#/components/schemas/Post"),
                "Page": page,
                "PageCreate": page_create,
                "PageList": created_list("#/components/schemas/Page"),
            },
        },
    }


def render_openapi() -> str:
    return json.dumps(build_openapi(), indent=2, ensure_ascii=False) + "\n"
