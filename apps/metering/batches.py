"""Moving what waits in Redis (usage counts, the request log) to PostgreSQL, each batch once.

A move renames the Redis key to a batch of its own and enters the batch in its prefix's index
(a sorted set by start time), both in one script call: the next request starts a new key. It
hands the batch's contents to the caller's `write(batch, contents)`, which writes the rows and a
marker row of the batch in one transaction and skips a batch already marked, then deletes the
batch and its index entry. A mover that dies between the rename and the delete leaves the batch
in the index: the next move of any app process (after every usage flush, every few seconds)
takes back every batch older than `LEASE_SECONDS`, and the marker says whether its rows were
written. Two movers of one batch are safe: the second waits on the first's marker and writes
nothing. With Redis persistence on (docs/operations.md), a batch and its index entry survive a
Redis restart as well.
"""

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from apps.common.cache import redis_client

logger = logging.getLogger("apps.metering")

# A batch older than this was left by a mover that died: a live one finishes in far less (a
# flush's batch of 80,000 log entries is written in about a second).
LEASE_SECONDS = 5
# Batches made before the index existed are found by a scan, older than this, in the minute job.
ORPHAN_AFTER_SECONDS = 60

Read = Callable[[Any, str], Any]  # (client, batch key) → its contents
Write = Callable[[str, Any], int]  # (batch id, contents) → how many it wrote (0: written before)

# KEYS: the source, the batch, the index; ARGV: the batch's start, the batch id.
_TAKE = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[2])
return 1
"""


def index_of(prefix: str) -> str:
    """The sorted set of a prefix's batches being moved: `gatehouse:usage:batch:` has
    `gatehouse:usage:batches`."""
    return prefix.rstrip(":") + "es"


def batch_take(source: str, prefix: str, now: float | None = None) -> str | None:
    """Rename what waits at `source` to a new batch, entered in the index; the batch id, or
    None when nothing waits."""
    started = int(time.time() if now is None else now)
    batch = f"{started}:{uuid.uuid4().hex}"
    taken = redis_client().eval(_TAKE, 3, source, prefix + batch, index_of(prefix), started, batch)
    return batch if int(taken) else None


def batch_move(source: str, prefix: str, read: Read, write: Write) -> int:
    """Move what waits at `source` as one new batch, then every batch a dead mover left in
    the index; how many it wrote."""
    batch = batch_take(source, prefix)
    moved = _finish(redis_client(), prefix, batch, read, write) if batch else 0
    return moved + batches_take_back(prefix, read, write)


def batches_take_back(prefix: str, read: Read, write: Write, now: float | None = None) -> int:
    """Move every batch of the index older than `LEASE_SECONDS`; how many it wrote."""
    client = redis_client()
    now = time.time() if now is None else now
    moved = 0
    for name in client.zrangebyscore(index_of(prefix), "-inf", now - LEASE_SECONDS):
        batch = name.decode() if isinstance(name, bytes) else name
        logger.warning("Moving a batch a stopped mover left in Redis (%s%s).", prefix, batch)
        moved += _finish(client, prefix, batch, read, write)
    return moved


def batches_sweep(prefix: str, read: Read, write: Write, now: float | None = None) -> int:
    """The minute job's part: the index's old batches, and any batch older than a minute that
    is in no index (left by a mover that ran before the index existed)."""
    moved = batches_take_back(prefix, read, write, now)
    client = redis_client()
    now = time.time() if now is None else now
    for name in client.scan_iter(match=prefix + "*", count=1000):
        batch = (name.decode() if isinstance(name, bytes) else name).removeprefix(prefix)
        started = batch.split(":", 1)[0]
        if now - (int(started) if started.isdigit() else 0) >= ORPHAN_AFTER_SECONDS:
            logger.warning("Moving a batch a stopped mover left in Redis (%s%s).", prefix, batch)
            moved += _finish(client, prefix, batch, read, write)
    return moved


def _finish(client: Any, prefix: str, batch: str, read: Read, write: Write) -> int:
    written = write(batch, read(client, prefix + batch))
    pipeline = client.pipeline(transaction=True)
    pipeline.delete(prefix + batch)
    pipeline.zrem(index_of(prefix), batch)
    pipeline.execute()
    return written


def batches_unmoved(source: str, prefix: str) -> tuple[int, float | None, int]:
    """For the metrics: how many batches of `prefix` wait to be written (taken, not finished),
    when the oldest was taken (None: none), and how many entries wait at `source` for the next
    move. One round trip."""
    with redis_client().pipeline(transaction=False) as pipe:
        pipe.zcard(index_of(prefix))
        pipe.zrange(index_of(prefix), 0, 0, withscores=True)
        pipe.type(source)
        pipe.hlen(source)
        pipe.llen(source)
        count, oldest, kind, hash_length, list_length = pipe.execute(raise_on_error=False)
    kind = kind.decode() if isinstance(kind, bytes) else str(kind)
    entries = {"hash": hash_length, "list": list_length}.get(kind, 0)
    return int(count), (float(oldest[0][1]) if oldest else None), int(entries)
