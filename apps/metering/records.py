"""What one request leaves for later, in the shapes it waits in: its usage count (a field of the
counts hash in Redis, or a tuple in the process's buffer) and its request log entry (an item of
the requests list in Redis, or a `RequestEntry` in the buffer), and how both are read back by
the apps that move them to PostgreSQL (apps/usage, apps/request_log)."""

import json
import time
from datetime import UTC, datetime
from typing import Any, NamedTuple

# A request as counted: key id, its hour's start (seconds since the epoch), operation, outcome.
CountEntry = tuple[int, int, str, str]

# The hash in Redis that counts wait in until they are moved to PostgreSQL.
REDIS_COUNTS = "gatehouse:usage:counts"
# The list in Redis that the request log's entries and completions wait in.
REDIS_REQUESTS = "gatehouse:requests"


class RequestEntry(NamedTuple):
    """One request in the log, in the order of its columns: the request log's table
    (apps/request_log) is written with `REQUEST_LOG_COLUMNS`, this tuple's field names."""

    request_id: str
    at: datetime
    key_id: int
    door: str  # `api` or `mcp`
    method: str
    path: str  # never the query string
    operation: str  # the API operation, or the MCP tool's name
    status: int
    error: str  # the error code of the answer, "" on success
    duration_ms: float | None  # None: the answer was never recorded (the process was killed)
    client_ip: str | None
    user_agent: str
    object_id: str  # the object it created or acted on (from the path or the created record)


REQUEST_LOG_COLUMNS: tuple[str, ...] = RequestEntry._fields

PATH_MAX = 300
USER_AGENT_MAX = 200
OPERATION_MAX = 60  # the columns hold 64: room for usage's `mcp:` before a tool's name
# What the request log's columns hold, for the text a caller could have chosen.
COLUMN_LIMITS = {
    "method": 8,
    "path": PATH_MAX,
    "operation": 64,
    "error": 40,
    "user_agent": USER_AGENT_MAX,
    "request_id": 32,
    "object_id": 40,
}


def column_text(value: str, limit: int) -> str:
    """`value` as a text column takes it: at most `limit` characters, no NUL byte and no lone
    surrogate (PostgreSQL refuses both, and a COPY refusing one row loses its whole batch)."""
    value = value[:limit]
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value.replace("\x00", "")


def entry_for_columns(entry: "RequestEntry") -> "RequestEntry":
    """The entry with every text field as its column takes it (the last guard before a batch
    is written, whichever way the entry came: the buffer or Redis)."""
    text = {name: column_text(str(getattr(entry, name)), n) for name, n in COLUMN_LIMITS.items()}
    return entry._replace(**text)  # type: ignore[arg-type]  # the text fields only


def count_field(entry: CountEntry) -> str:
    """A count's field in Redis: `key id|hour|outcome|operation` (the operation last: it is the
    only part that could hold the separator)."""
    key_id, hour, operation, outcome = entry
    return f"{key_id}|{hour}|{outcome}|{operation}"


def count_of_field(field: str) -> tuple[int, datetime, str, str] | None:
    """The (key id, hour, operation, outcome) a field counts, or None for a field not ours."""
    try:
        key_id, hour, outcome, operation = field.split("|", 3)
        return int(key_id), datetime.fromtimestamp(int(hour), UTC), operation, outcome
    except ValueError:
        return None


REFUSAL_STATUSES = frozenset({401, 403, 429})


def outcome_of(status: int) -> str:
    """How a request is counted: the refusals a key can earn by name, the rest by class."""
    return str(status) if status in REFUSAL_STATUSES else f"{status // 100}xx"


def hour_now() -> int:
    """The current hour's start, in seconds since the epoch."""
    return int(time.time()) // 3600 * 3600


def log_item(kind: str, fields: list[object]) -> str:
    """A request log item as it waits in Redis: `F|[entry]` a whole entry, `C|[completion]`
    what the answer adds to an entry pushed as it began (`P<status>|[entry]`, which the
    limiter's script writes itself)."""
    return f"{kind}|{json.dumps(fields, separators=(',', ':'), ensure_ascii=False)}"


def entry_fields(entry: RequestEntry) -> list[object]:
    """An entry as JSON can carry it (the time as seconds since the epoch)."""
    request_id, at, *rest = entry
    return [request_id, at.timestamp(), *rest]


def entry_of_fields(fields: list[Any], status: int | None = None) -> RequestEntry:
    """The entry of `entry_fields`' list (with `status` for an entry pushed as it began)."""
    request_id, at, key_id, door, method, path, operation, stat, error, ms, ip, agent, obj = fields
    return RequestEntry(
        str(request_id),
        datetime.fromtimestamp(float(at), UTC),
        int(key_id),
        str(door),
        str(method),
        str(path),
        str(operation),
        int(status if status is not None else stat),
        str(error),
        None if ms is None else float(ms),
        None if ip is None else str(ip),
        str(agent),
        str(obj),
    )
