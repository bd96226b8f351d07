"""`GET /keys/{keyId}/requests` (docs/product.md §3.6, §11): a key's request log, newest first,
for owners and admins with keys:read; also the MCP tool `list_key_requests` and the CLI's
`gatehouse keys requests ID`."""

from typing import Any

from apps.api.operations import Call, NotFound, Operation, Param, object_schema
from apps.api.schemas import date_time
from apps.api_keys.models import ApiKey
from apps.key_operations.operations import KEY_ID, KEYS_READ

from .reading import LogFilters, parse_status, parse_when, request_to_json, requests_page

WHEN = "An RFC 3339 date-time (2027-03-31T12:00:00Z) or a time ago: 30m, 2h, 7d."
# An RFC 3339 date-time or a time ago; a value of this shape that is no real moment is 400.
MOMENT = (
    r"^(?:[0-9]{1,5}[smhd]|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}"
    r"(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:[0-9]{2}))$"
)

PARAMS = (
    KEY_ID,
    Param(
        "status",
        "query",
        "Only requests with this outcome: 2xx, 3xx, 4xx, 5xx, or one status such as 429.",
        type="string",
        max_length=3,
        pattern=r"^(?:[1-5]xx|[1-5][0-9]{2})$",
    ),
    Param(
        "since",
        "query",
        f"Only requests at or after this moment. {WHEN}",
        type="string",
        max_length=40,
        pattern=MOMENT,
    ),
    Param(
        "until",
        "query",
        f"Only requests before this moment. {WHEN}",
        type="string",
        max_length=40,
        pattern=MOMENT,
    ),
    Param("cursor", "query", "The `next` value of the page before.", type="string", max_length=120),
    Param("limit", "query", "How many to return: 1 to 100 (default 50).", maximum=100, default=50),
)

REQUEST = object_schema(
    {
        "requestId": {"type": "string", "description": "What the answer's Request-Id said."},
        "time": date_time(),
        "door": {"enum": ["api", "mcp"]},
        "method": {"type": "string"},
        "path": {"type": "string", "description": "The path, never the query string."},
        "operation": {
            "type": "string",
            "description": (
                "The operation's own name, the same for the API and the MCP tool that runs "
                "it (get_workspace); an MCP message naming no tool gives its method (tools/list)."
            ),
        },
        "status": {"type": "integer"},
        "error": {"type": ["string", "null"], "description": "The error code; null on success."},
        "durationMs": {
            "type": ["number", "null"],
            "description": "null when the answer was never recorded (the server was stopped).",
        },
        "clientIp": {"type": ["string", "null"]},
        "userAgent": {"type": "string", "description": "Its first 200 characters."},
    }
)
REQUEST_LIST = object_schema(
    {
        "data": {"type": "array", "items": REQUEST},
        "next": {
            "type": ["string", "null"],
            "description": "Pass as cursor for the next page; null on the last.",
        },
    }
)


def _list_key_requests(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    key = ApiKey.objects.filter(workspace=call.workspace, pk=params["keyId"]).only("pk").first()
    if key is None:
        raise NotFound("No key with this id in this workspace.")
    if "status" in params:
        parse_status(params["status"])  # refused here, naming the parameter
    filters = LogFilters(
        key_id=key.pk,
        status=params.get("status", ""),
        since=parse_when(params["since"], "since") if "since" in params else None,
        until=parse_when(params["until"], "until") if "until" in params else None,
    )
    page, more = requests_page(
        call.workspace.pk, filters, cursor=params.get("cursor"), limit=params["limit"]
    )
    return {"data": [request_to_json(entry) for entry in page], "next": more}


OPERATIONS = (
    Operation(
        name="list_key_requests",
        method="GET",
        path="/keys/{keyId}/requests",
        needs=KEYS_READ,
        title="List a key's requests",
        summary=(
            "The requests one API key made (API and MCP, successes and refusals), newest first, "
            "each with the Request-Id its answer carried; filter by status, since and until, "
            "a page at a time (pass `next` as cursor). Kept 30 days."
        ),
        output_name="KeyRequestList",
        output=REQUEST_LIST,
        params=PARAMS,
        can_be_not_found=True,
        cli="keys requests",
        cli_columns=(
            "time",
            "requestId",
            "door",
            "method",
            "path",
            "operation",
            "status",
            "error",
            "durationMs",
        ),
        run=_list_key_requests,
    ),
)
