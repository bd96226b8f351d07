"""The JSON Schemas of a quota (docs/product.md §17): its shape, and a period's use."""

from typing import Any

from apps.api.operations import object_schema
from apps.api.schemas import date_time
from apps.common.quota_periods import PERIODS, REQUESTS_MAX, REQUESTS_MIN


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "type": [schema["type"], "null"]}


QUOTA = {
    **object_schema(
        {
            "requests": {"type": "integer", "minimum": REQUESTS_MIN, "maximum": REQUESTS_MAX},
            "period": {"type": "string", "enum": list(PERIODS)},
        }
    ),
    "description": "Requests a period (from the key's creation; never: once, no refill).",
}
QUOTA_OR_NULL = _nullable(QUOTA)
QUOTA_USE_RECORD = {
    **object_schema(
        {
            **QUOTA["properties"],
            "used": {"type": "integer", "minimum": 0},
            "left": {"type": "integer", "minimum": 0},
            "periodStart": date_time(),
            "refillsAt": _nullable(date_time()),
        }
    ),
    "description": "The quota's current period, null for a key without a quota.",
}
QUOTA_USE = _nullable(QUOTA_USE_RECORD)
