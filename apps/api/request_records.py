"""What one request leaves for later, as it waits in this process or in Redis: its usage count
(a field of the counts hash) and its request log entry (an item of the requests list), the
changes this process owes Redis, and how both are written and read back (apps/api/usage.py
gathers and flushes them; apps/usage and apps/request_log move them to PostgreSQL)."""

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from django.http import HttpRequest

    from .facts import RequestFacts

logger = logging.getLogger("apps.api")

# A request as counted: key id, its hour's start (seconds since the epoch), operation, outcome.
CountEntry = tuple[int, int, str, str]

# The hash in Redis that counts wait in until they are moved to PostgreSQL.
REDIS_COUNTS = "gatehouse:usage:counts"
# The list in Redis that the request log's entries and completions wait in.
REDIS_REQUESTS = "gatehouse:requests"


class RequestEntry(NamedTuple):
    """One request in the log (apps/request_log), in the order of its columns."""

    request_id: str
    at: datetime
    key_id: int
    door: str  # `api` or `mcp`
    method: str
    path: str  # never the query string
    operation: str  # the API operation, or `mcp:<tool>`
    status: int
    error: str  # the error code of the answer, "" on success
    duration_ms: float | None  # None: the answer was never recorded (the process was killed)
    client_ip: str | None
    user_agent: str
    object_id: str  # the object it created or acted on (from the path or the created record)


# At most this many pending count fields ride on one limiter call; the flush takes the rest.
PENDING_PER_CALL = 32
# Corrections kept while Redis is unreachable (beyond it they are dropped, and logged).
PENDING_MAX = 10_000


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


class _RedisPending:
    """Count changes of this process not yet in Redis: corrections of what the limiter counted,
    and requests it did not count (no limit, Redis was away)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.amounts: Counter[str] = Counter()
        self.log_items: list[str] = []

    def add_log(self, item: str) -> None:
        with self.lock:
            if len(self.log_items) >= PENDING_MAX:
                logger.warning(
                    "%s request log items could not reach Redis; they are dropped.",
                    len(self.log_items),
                )
                self.log_items.clear()
            self.log_items.append(item)

    def take_log(self, most: int | None = None) -> list[str]:
        if not self.log_items:  # read without the lock: the common case
            return []
        with self.lock:
            if most is None or len(self.log_items) <= most:
                taken, self.log_items = self.log_items, []
            else:
                taken, self.log_items = self.log_items[:most], self.log_items[most:]
        return taken

    def add(self, *changes: tuple[str, int]) -> None:
        with self.lock:
            for field_name, amount in changes:
                self.amounts[field_name] += amount
            if len(self.amounts) > PENDING_MAX:
                logger.warning(
                    "%s usage count changes could not reach Redis; they are dropped.",
                    len(self.amounts),
                )
                self.amounts.clear()

    def take(self, most: int | None = None) -> list[tuple[str, int]]:
        if not self.amounts:  # read without the lock: the common case, on every request
            return []
        with self.lock:
            if most is None or len(self.amounts) <= most:
                taken = [(f, a) for f, a in self.amounts.items() if a]
                self.amounts = Counter()
            else:
                taken = []
                for field_name in list(self.amounts)[:most]:
                    amount = self.amounts.pop(field_name)
                    if amount:
                        taken.append((field_name, amount))
        return taken


_redis_pending = _RedisPending()


def redis_pending_add(*changes: tuple[str, int]) -> None:
    """Send these count changes (field, amount) to Redis with the next limiter call or flush."""
    _redis_pending.add(*changes)


def redis_pending_take() -> tuple[list[tuple[str, int]], list[str]]:
    """A limiter call's share of what waits for Redis, count changes and request log items:
    it sends them, or gives them back."""
    return _redis_pending.take(PENDING_PER_CALL), _redis_pending.take_log(PENDING_PER_CALL)


def redis_pending_restore(changes: list[tuple[str, int]], log_items: Sequence[str] = ()) -> None:
    """Give back what a limiter call could not send."""
    if changes:
        _redis_pending.add(*changes)
    for item in log_items:
        _redis_pending.add_log(item)


def redis_log_add(item: str) -> None:
    """Send this request log item to Redis with the next limiter call or flush."""
    _redis_pending.add_log(item)


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


PATH_MAX = 300
USER_AGENT_MAX = 200


def request_entry(
    request: "HttpRequest", facts: "RequestFacts", status: int, error: str
) -> RequestEntry:
    from apps.common.http import client_ip

    assert facts.key_id is not None
    return RequestEntry(
        facts.request_id,
        datetime.now(UTC),
        facts.key_id,
        facts.door,
        str(request.method),
        request.path[:PATH_MAX],
        facts.operation or "other",
        status,
        error,
        None if status == 0 else round((time.perf_counter() - facts.started) * 1000, 2),
        client_ip(request),
        request.META.get("HTTP_USER_AGENT", "")[:USER_AGENT_MAX],
        facts.object_id,
    )


def log_entry_json(request: "HttpRequest", facts: "RequestFacts") -> str:
    """The request's log entry as the limiter's script pushes it, as it began (no status, no
    duration yet): the JSON part of a `P<status>|…` item."""
    fields = entry_fields(request_entry(request, facts, 0, ""))
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)
