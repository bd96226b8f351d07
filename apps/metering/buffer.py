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
are lost. A request whose limiter call failed, perhaps after Redis ran it, is settled by
its mark once Redis answers again (apps/metering/settling.py): counted and logged once. Without
Redis, counts wait in the buffer like the rest.

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
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from .pending import (
    NOTED_SECONDS,
    redis_pending_restore,
    redis_pending_take_all,
    redis_unsettled_give_up,
)
from .records import REDIS_COUNTS, REDIS_REQUESTS, RequestEntry, count_of_field
from .settling import redis_unsettled_settle

logger = logging.getLogger("apps.metering")


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


def _push_pending(gathered: Gathered, at_exit: bool = False) -> None:
    """Settle the requests whose limiter call failed (apps/metering/settling.py), then send
    every pending count change to Redis in one pipeline. If Redis cannot take them, the
    requests it never counted go to PostgreSQL with this flush, and the corrections wait."""
    from apps.common.cache import redis_client, redis_health

    reached = redis_health.should_try()
    if reached:
        try:
            redis_unsettled_settle(redis_client())
        except Exception as error:
            redis_health.failed(error)
            reached = False
    # Past its mark's life Redis can no longer tell; a stopping process cannot wait for it.
    redis_unsettled_give_up(time.time(), 0 if at_exit and not reached else NOTED_SECONDS)
    changes, log_items = redis_pending_take_all()
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


Mover = Callable[[], int]
Sweeper = Callable[[float], int]
_movers: dict[str, Mover] = {}
_sweepers: dict[str, Sweeper] = {}


def register_mover(mover: Mover, *, name: str, sweep: Sweeper) -> None:
    """Have `mover()` run after every flush when Redis is configured (the usage app moves the
    counts from Redis to PostgreSQL), and `sweep(now)` (what waits, and every batch a stopped
    mover left before `now`) when an operator moves by hand (`manage.py movebatches`)."""
    _movers[name] = mover
    _sweepers[name] = sweep


def batches_move_all() -> dict[str, int]:
    """Move everything waiting in Redis now, every batch a mover holds included (one still
    moving is safe to take: its marker lets only one write); how many each part wrote."""
    if not settings.REDIS_URL:
        return {}
    moved = usage_flush()  # what this process holds goes first
    later = time.time() + 24 * 3600  # every batch counts as left behind
    return {name: moved.get(name, 0) + sweep(later) for name, sweep in _sweepers.items()}


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


MOVER_ERROR_INTERVAL_SECONDS = 60
_mover_errors_at: dict[str, float] = {}


def _mover_failed(name: str) -> None:
    """Log a failed move with its traceback at most once a minute a mover: an outage would
    otherwise write one at every flush of every process (96 a minute, issue 53)."""
    now = time.monotonic()
    if (
        now - _mover_errors_at.get(name, -MOVER_ERROR_INTERVAL_SECONDS)
        >= MOVER_ERROR_INTERVAL_SECONDS
    ):
        _mover_errors_at[name] = now
        logger.exception(
            "Moving %s from Redis failed; what waits there stays for the next move "
            "(said at most once a minute).",
            name,
        )
    else:
        logger.debug("Moving %s from Redis failed again.", name, exc_info=True)


def usage_flush(at_exit: bool = False) -> dict[str, int]:
    """Write what was gathered since the last flush, then (with Redis) move what waits there;
    how many each mover wrote. A flusher that fails loses its part of this flush (logged),
    never the others'."""
    gathered = _buffer.take()
    with_redis = bool(settings.REDIS_URL)
    moved: dict[str, int] = {}
    if with_redis:
        _push_pending(gathered, at_exit)
    if not gathered and not with_redis:
        return moved
    try:
        if gathered:
            for flusher in _flushers:
                try:
                    flusher(gathered)
                except Exception:
                    logger.exception("Writing usage failed; this flush's part of it is lost.")
        if with_redis:
            for name, mover in _movers.items():
                try:
                    moved[name] = mover()
                except Exception:
                    _mover_failed(name)
    finally:
        if threading.current_thread().name == "usage-flush":
            # The flushing thread's own connection, closed after every flush whatever
            # CONN_MAX_AGE says: between flushes a process holds one connection, its
            # requests', and a pooler or max_connections counts one per app process.
            from django.db import connections

            connections.close_all()
    return moved


atexit.register(usage_flush, at_exit=True)


def buffer_reset() -> None:
    """Forget everything gathered (for tests)."""
    _buffer.take()
