"""The JSON Schemas of the API keys group: a key's record, its restrictions, and the bodies of
create, roll and narrow (docs/product.md §3.6)."""

from typing import Any

from apps.api.operations import Param, object_schema
from apps.api.schemas import date_time, long_text, single_line_text
from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey, ApiKeyState
from apps.api_keys.policy import DESCRIPTION_MAX_LENGTH, EXPIRY_DAY_CHOICES
from apps.api_keys.restrictions import MAX_CHOSEN, MAX_NETWORKS, RATE_LIMIT_MAX, RATE_LIMIT_MIN
from apps.api_keys.states import CURRENT
from apps.quotas.schemas import QUOTA, QUOTA_USE


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "type": [schema["type"], "null"]}


def _chosen(group: str) -> dict[str, Any]:
    return _nullable(
        {
            "type": "array",
            "items": {"type": "integer", "minimum": 1},
            "maxItems": MAX_CHOSEN,
            "description": f"The {group} the key is limited to, or null for all {group}.",
        }
    )


_RESTRICTION_PROPERTIES: dict[str, Any] = {
    "communities": _chosen("communities"),
    "pages": _chosen("pages"),
    "products": _chosen("products"),
    "networks": {
        "type": "array",
        "items": {"type": "string", "maxLength": 50},
        "maxItems": MAX_NETWORKS,
        "description": "IPv4/IPv6 CIDR ranges the key accepts requests from; empty for any.",
    },
    "rateLimitPerMinute": _nullable(
        {
            "type": "integer",
            "minimum": RATE_LIMIT_MIN,
            "maximum": RATE_LIMIT_MAX,
            "description": "The key's own limit of requests a minute; null for the default.",
        }
    ),
}
RESTRICTIONS = object_schema(_RESTRICTION_PROPERTIES)
RESTRICTION_CHANGES = {
    **object_schema(_RESTRICTION_PROPERTIES, required=False),
    "description": "The restrictions to set; those left out stay as they are.",
}
SCOPES = {
    "type": "array",
    "items": {"type": "string", "enum": list(EVERY_SCOPE)},
    "minItems": 1,
    "uniqueItems": True,
}

_KEY_PROPERTIES: dict[str, Any] = {
    "id": {"type": "integer"},
    "name": {"type": "string"},
    "description": {"type": "string"},
    "hint": {"type": "string"},
    "kind": {"type": "string", "enum": ["workspace", "member"]},
    "tag": {"type": ["string", "null"], "enum": ["cli", "mcp", None]},
    "holderEmail": {"type": "string", "format": "email"},
    "scopes": {"type": "array", "items": {"type": "string"}},
    "restrictions": RESTRICTIONS,
    "createdAt": date_time(),
    "expiresAt": _nullable(date_time()),
    "lastUsedAt": _nullable(date_time()),
    "lastUsedIp": {"type": ["string", "null"]},
    "previousSecretWorksUntil": {
        **_nullable(date_time()),
        "description": (
            "Until when the secret it had before its last roll (or the person's secret it "
            "replaced in a hand-over) still works as this key; null when none does."
        ),
    },
    "state": {
        "type": "string",
        "enum": ["pending", "denied", "active", "suspended", "expired", "revoked"],
        "description": (
            "pending and denied only under the workspace's approval policy; suspended while "
            "its holder is suspended by the workspace's identity provider."
        ),
    },
    "approval": _nullable(
        {
            **object_schema(
                {
                    "requestedAt": date_time(),
                    "decision": {"type": ["string", "null"], "enum": ["approved", "denied", None]},
                    "decidedAt": _nullable(date_time()),
                    "decidedBy": {
                        "type": ["string", "null"],
                        "description": "The owner's e-mail; null while waiting, or when the "
                        "schedule denied the key after 7 days without an answer.",
                    },
                    "reason": {"type": "string", "description": "A denial's reason."},
                }
            ),
            "description": "The key's approval, null when it never needed one.",
        }
    ),
    "quota": _nullable(QUOTA),
    "quotaShared": {"type": "boolean"},
    "serviceAccount": _nullable(
        {
            **object_schema({"id": {"type": "integer"}, "name": {"type": "string"}}),
            "description": "The service account holding the key, null for a person's key.",
        }
    ),
}
KEY = object_schema(_KEY_PROPERTIES)
KEY_DETAIL = object_schema(
    {
        **_KEY_PROPERTIES,
        "scopesLastUsed": {
            "type": "object",
            "additionalProperties": _nullable(date_time()),
            "description": "When each scope was last used, null for never.",
        },
        "quotaUse": QUOTA_USE,
        "handedOverTo": _nullable(
            {
                **object_schema(
                    {
                        "keyId": {"type": "integer"},
                        "hint": {"type": "string"},
                        "serviceAccount": {"type": "string"},
                        "at": date_time(),
                        "oldSecretWorksUntil": {
                            **_nullable(date_time()),
                            "description": "Until when this key's secret still works as the "
                            "new key; null once it no longer does.",
                        },
                    }
                ),
                "description": (
                    "The service account's key that replaced this one when an owner handed it "
                    "over (docs/product.md §12); null for a key never handed over."
                ),
            }
        ),
    }
)
KEY_SECRET = object_schema(
    {
        **_KEY_PROPERTIES,
        "secret": {"type": "string", "description": "The key's secret: shown this once only."},
    }
)
KEY_LIST = object_schema(
    {
        "data": {"type": "array", "items": KEY},
        "next": {
            "type": ["string", "null"],
            "description": "Pass as cursor for the next page; null on the last.",
        },
    }
)
KEY_CREATE = {
    **object_schema(
        {
            "name": single_line_text(100),
            "description": long_text(DESCRIPTION_MAX_LENGTH, required=False),
            "scopes": SCOPES,
            "expiresInDays": {"type": "integer", "enum": list(EXPIRY_DAY_CHOICES)},
            "expiresAt": {
                **date_time(),
                "description": "At most 365 days ahead, and no later than the calling key.",
            },
            "noExpiry": {
                "type": "boolean",
                "enum": [True],
                "description": "No expiry: only if the calling key has none and the "
                "workspace's key policy allows it.",
            },
            "restrictions": RESTRICTION_CHANGES,
            "quota": {**_nullable(QUOTA), "description": "At most the calling key's own."},
        },
        required=False,
    ),
    "required": ["name", "scopes"],
}
KEY_ROLL = object_schema(
    {
        "graceSeconds": {
            "type": "integer",
            "enum": [0, 3600, 86400, 604800],
            "default": 0,
            "description": "How long the old secret keeps working: 0, 1 hour, 24 hours, 7 days.",
        }
    },
    required=False,
)
KEY_NARROW = {
    **object_schema({"scopes": SCOPES, "restrictions": RESTRICTION_CHANGES}, required=False),
    "minProperties": 1,
}

LIST_PARAMS = (
    Param(
        "state",
        "query",
        "Only keys in this state; `current`: the keys that work or wait for approval (none "
        "revoked, denied or expired), as the dashboard's list opens.",
        type="string",
        enum=(*ApiKeyState.values, CURRENT),
    ),
    Param(
        "kind", "query", "Only keys of this kind.", type="string", enum=tuple(ApiKey.Kind.values)
    ),
    Param(
        "holder",
        "query",
        "Only the keys of this holder: an e-mail address, or service:ID for a service account.",
        type="string",
        max_length=254,
    ),
    Param(
        "idleDays",
        "query",
        "Only keys unused (or, never used, created) at least this many days ago.",
        maximum=3650,
    ),
    Param("cursor", "query", "The `next` value of the page before.", type="string", max_length=64),
    Param("limit", "query", "How many to return: 1 to 100 (default 50).", maximum=100, default=50),
)
