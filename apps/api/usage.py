"""What requests leave behind, gathered in memory and written in batches, off the request path.

A request adds to this process's buffer: its count (per key, hour, operation and outcome), the
key's last use, the scopes and chosen objects it exercised, the network it came from. Every
`USAGE_FLUSH_SECONDS` a daemon thread hands what was gathered to the flushers the apps register
(`register_flusher`), which write it in a few statements. So no request waits for a write, and
10,000 keys in rotation cost what one key costs.

Counts, with Redis configured, never wait in the buffer: the rate limiter's one script call
of each request adds that request's count to a hash in Redis (`REDIS_COUNTS`), as the outcome
it will have if nothing else goes wrong (allowed: 2xx, refused: 429). When the answer turns out
otherwise (a 403, an MCP tool's name), the correction rides on this process's next limiter
call, or on its next flush. The usage app moves the hash to PostgreSQL in every flush and every
minute on the schedule (apps/usage/moving.py). So a killed app process loses no count; at most
a request it was answering stays counted as it began, and its last corrections (never a total)
are lost. Without Redis, counts wait in the buffer like the rest.

The request log (every request that presents a key of ours) goes the same way: with Redis the
limiter's call appends the request's entry to a list (`REDIS_REQUESTS`) as it began, and what
only the answer knows (status, error, duration, the MCP tool) follows as a completion on the
process's next call or flush; without Redis the whole entry waits in the buffer. The request
log app writes and moves them (apps/request_log).

If a worker dies, what it gathered since its last flush is lost: at most a few seconds of
stamps (and, without Redis, counts), never a wrong total (flushes only add). With
`USAGE_FLUSH_SECONDS = 0` every request flushes at its end (the tests, and anyone who wants
every stamp at once).
"""

import atexit
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from django.conf import settings

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


@dataclass
class Gathered:
    """One flush's worth: counts by (key id, hour, operation, outcome); per key the last use
    (time, address, whether by the previous secret, whether its first); stamps by (key id,
    field, name); first sightings of networks by (key id, network) → (time, address)."""

    counts: Counter[tuple[int, datetime, str, str]] = field(default_factory=Counter)
    last_use: dict[int, tuple[datetime, str | None, bool, bool]] = field(default_factory=dict)
    stamps: dict[tuple[int, str, str], datetime] = field(default_factory=dict)
    networks: dict[tuple[int, str], tuple[datetime, str]] = field(default_factory=dict)
    requests: list[RequestEntry] = field(default_factory=list)
    # With Redis: the request log's items as they wait in `REDIS_REQUESTS`, when Redis was
    # away (full entries only: `log_item`).
    request_items: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.counts
            or self.last_use
            or self.stamps
            or self.networks
            or self.requests
            or self.request_items
        )


Flusher = Callable[[Gathered], None]
_flushers: list[Flusher] = []


def register_flusher(flusher: Flusher) -> None:
    """Have `flusher(gathered)` write its part of every flush (apps call this in ready())."""
    if flusher not in _flushers:
        _flushers.append(flusher)


class _Buffer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.gathered = Gathered()
        self.thread_pid: int | None = None

    def take(self) -> Gathered:
        with self.lock:
            gathered, self.gathered = self.gathered, Gathered()
        return gathered

    def ensure_flusher(self) -> None:
        """A flushing thread in this process (a forked worker starts its own)."""
        if self.thread_pid == os.getpid():
            return
        with self.lock:
            if self.thread_pid == os.getpid():
                return
            self.thread_pid = os.getpid()
        threading.Thread(target=self._run, name="usage-flush", daemon=True).start()

    def _run(self) -> None:
        while True:
            time.sleep(max(1.0, float(settings.USAGE_FLUSH_SECONDS)))
            usage_flush()


_buffer = _Buffer()


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


def _push_pending(gathered: Gathered) -> None:
    """Send every pending count change to Redis in one pipeline. If Redis cannot take them, the
    requests it never counted go to PostgreSQL with this flush, and the corrections wait."""
    from apps.common.cache import redis_client, redis_health

    changes, log_items = _redis_pending.take(), _redis_pending.take_log()
    if not changes and not log_items:
        return
    if redis_health.should_try():
        try:
            pipeline = redis_client().pipeline(transaction=False)
            for field_name, amount in changes:
                pipeline.hincrby(REDIS_COUNTS, field_name, amount)
            if log_items:
                pipeline.rpush(REDIS_REQUESTS, *log_items)
            pipeline.execute()
            return
        except Exception as error:
            redis_health.failed(error)
    waiting = []
    for field_name, amount in changes:
        entry = count_of_field(field_name)
        if amount > 0 and entry is not None:
            gathered.counts[entry] += amount
        else:
            waiting.append((field_name, amount))
    waiting_log: list[str] = []
    for item in log_items:
        # Whole entries go to PostgreSQL now; completions wait for the entry they complete.
        (gathered.request_items if item.startswith("F|") else waiting_log).append(item)
    redis_pending_restore(waiting, waiting_log)


Mover = Callable[[], object]
_movers: list[Mover] = []


def register_mover(mover: Mover) -> None:
    """Have `mover()` run after every flush when Redis is configured (the usage app moves the
    counts from Redis to PostgreSQL)."""
    if mover not in _movers:
        _movers.append(mover)


def add(update: Callable[[Gathered], None]) -> None:
    """Apply `update` to the buffer under its lock."""
    with _buffer.lock:
        update(_buffer.gathered)


def request_done() -> None:
    """At the end of an API or MCP request: flush now when flushing is synchronous, else make
    sure this process has its flushing thread."""
    if settings.USAGE_FLUSH_SECONDS <= 0:
        usage_flush()
    else:
        _buffer.ensure_flusher()


def usage_flush() -> None:
    """Write what was gathered since the last flush. A flusher that fails loses its part of
    this flush (logged), never the others'."""
    gathered = _buffer.take()
    with_redis = bool(settings.REDIS_URL)
    if with_redis:
        _push_pending(gathered)
    if not gathered and not with_redis:
        return
    try:
        if gathered:
            for flusher in _flushers:
                try:
                    flusher(gathered)
                except Exception:
                    logger.exception("Writing usage failed; this flush's part of it is lost.")
        if with_redis:
            for mover in _movers:
                try:
                    mover()
                except Exception:
                    logger.exception("Moving usage counts from Redis failed; they wait there.")
    finally:
        if threading.current_thread().name == "usage-flush":
            # The flushing thread's own connection, closed after every flush whatever
            # CONN_MAX_AGE says: between flushes a process holds one connection, its
            # requests', and a pooler or max_connections counts one per app process.
            from django.db import connections

            connections.close_all()


atexit.register(usage_flush)


# (key id, address) → when this process last queued its network: queued at most every ten
# minutes per key and address in a process; the flush decides against the database whether
# the network is new.
_networks_queued: dict[tuple[int, str], float] = {}
NETWORK_REQUEUE_SECONDS = 600


def network_of(address: str) -> str | None:
    """The network an address is judged by: its IPv4 /24 or IPv6 /64."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if ip.version == 4 else 64
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def note_network(key_id: int, address: str | None, now: datetime) -> None:
    """Queue the network of a key's request for the flush, unless this address was queued
    lately (looked up before any address is parsed: this runs on every request)."""
    if not address:
        return
    seen = (key_id, address)
    moment = time.monotonic()
    queued = _networks_queued.get(seen)
    if queued is not None and moment - queued < NETWORK_REQUEUE_SECONDS:
        return
    if (network := network_of(address)) is None:
        return
    if len(_networks_queued) >= 100_000:
        _networks_queued.clear()
    _networks_queued[seen] = moment
    mark = (key_id, network)

    def update(gathered: Gathered) -> None:
        gathered.networks.setdefault(mark, (now, address))

    add(update)


def usage_reset() -> None:
    """Forget everything gathered and queued (for tests)."""
    _buffer.take()
    _redis_pending.take()
    _redis_pending.take_log()
    _networks_queued.clear()


PATH_MAX = 300
USER_AGENT_MAX = 200


def _entry(request: "HttpRequest", facts: "RequestFacts", status: int, error: str) -> RequestEntry:
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
    fields = entry_fields(_entry(request, facts, 0, ""))
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def log_request(request: "HttpRequest", facts: "RequestFacts", status: int, error: str) -> None:
    """Record the answered request in the log: with Redis, complete the entry the limiter's
    call pushed (or push the whole entry, when it pushed none); without, in the buffer."""
    if facts.logged:
        duration = round((time.perf_counter() - facts.started) * 1000, 2)
        operation = facts.operation or "other"
        completion = [facts.request_id, status, error, duration, operation, facts.object_id]
        _redis_pending.add_log(log_item("C", completion))
        return
    entry = _entry(request, facts, status, error)
    if settings.REDIS_URL:
        _redis_pending.add_log(log_item("F", entry_fields(entry)))
        return

    def update(gathered: Gathered) -> None:
        gathered.requests.append(entry)

    add(update)
