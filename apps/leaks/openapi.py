"""How GitHub's secret-scanning endpoint is described in the OpenAPI document."""

from typing import Any

from apps.api.openapi import error_response

from .reports import MAX_REPORTED_TOKENS

REPORTED_ITEM = {
    "type": "object",
    "required": ["token"],
    "properties": {
        "token": {"type": "string", "description": "The string found."},
        "type": {"type": "string", "description": "The secret type registered with GitHub."},
        "url": {"type": "string", "description": "Where it was found."},
        "source": {"type": "string", "description": "e.g. content, commit, issue."},
    },
}
VERDICT = {
    "type": "object",
    "required": ["token_hash", "token_type", "label"],
    "properties": {
        "token_hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "token_type": {"type": "string"},
        "label": {"enum": ["true_positive", "false_positive"]},
    },
}
SIGNATURE_HEADERS = [
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


def secret_scanning_paths() -> dict[str, Any]:
    """GitHub's secret-scanning partner endpoint: signed reports of leaked keys."""
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
                "parameters": SIGNATURE_HEADERS,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "array",
                                "maxItems": MAX_REPORTED_TOKENS,
                                "items": REPORTED_ITEM,
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "One verdict per reported token.",
                        "content": {
                            "application/json": {"schema": {"type": "array", "items": VERDICT}}
                        },
                    },
                    "400": {"$ref": "#/components/responses/InvalidInput"},
                    "403": error_response(
                        "A missing, forged or no longer current signature; nothing is revoked.",
                        ["invalid-signature"],
                    ),
                    "413": {"$ref": "#/components/responses/PayloadTooLarge"},
                },
            }
        }
    }
