"""The JSON Schemas of service accounts over the API (docs/product.md §12): the record, and
what making or changing one takes."""

from apps.api.operations import object_schema
from apps.api.schemas import long_text, single_line_text
from apps.api_keys.policy import DESCRIPTION_MAX_LENGTH
from apps.quotas.schemas import QUOTA_OR_NULL, QUOTA_USE

SERVICE_ACCOUNT = object_schema(
    {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "description": {"type": "string"},
        "userEmail": {
            "type": "string",
            "description": "Its stable, undeliverable address: the holder e-mail of its keys.",
        },
        "createdAt": {"type": "string", "format": "date-time"},
        "createdBy": {"type": ["string", "null"], "description": "The owner who made it."},
        "liveKeys": {"type": "integer", "description": "Its keys that work or wait."},
        "lastUsedAt": {"type": ["string", "null"], "format": "date-time"},
        "quotaShared": {
            **QUOTA_OR_NULL,
            "description": "One allowance all its keys draw from; null: each key its own.",
        },
        "quotaUse": QUOTA_USE,
    }
)
SERVICE_ACCOUNT_LIST = object_schema({"data": {"type": "array", "items": SERVICE_ACCOUNT}})
SHARED_QUOTA_INPUT = {
    **QUOTA_OR_NULL,
    "description": (
        "One allowance all its keys draw from, periods from the account's creation; null ends "
        "the sharing (each key keeps the same quota as its own)."
    ),
}
SERVICE_ACCOUNT_CREATE = {
    **object_schema(
        {
            "name": single_line_text(100),
            "description": long_text(DESCRIPTION_MAX_LENGTH, required=False),
            "quotaShared": SHARED_QUOTA_INPUT,
        },
        required=False,
    ),
    "required": ["name"],
}
SERVICE_ACCOUNT_PATCH = {
    **object_schema(
        {
            "name": single_line_text(100),
            "description": long_text(DESCRIPTION_MAX_LENGTH, required=False),
            "quotaShared": SHARED_QUOTA_INPUT,
        },
        required=False,
    ),
    "minProperties": 1,
}
