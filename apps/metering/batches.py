"""Moving what waits in Redis (usage counts, the request log) to PostgreSQL, each batch once.

A move renames the Redis key to a batch of its own (atomic: the next request starts a new key),
hands its contents to the caller's `write(batch, contents)`, which writes the rows and a marker
row of the batch in one transaction and skips a batch already marked, then deletes the batch.
A mover that dies between the rename and the delete leaves the batch behind: the minute job
(`batches_sweep`) moves it again, and the marker says whether its rows were written.
"""

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from apps.common.cache import redis_client

logger = logging.getLogger("apps.metering")

# A batch older than this was left by a mover that died: a live one finishes in far less.
ORPHAN_AFTER_SECONDS = 60

Read = Callable[[Any, str], Any]  # (client, batch key) → its contents
Write = Callable[[str, Any], int]  # (batch id, contents) → how many it wrote (0: written before)


def batch_move(source: str, prefix: str, read: Read, write: Write) -> int:
    """Move what waits at `source` as one new batch; how many it wrote."""
    client = redis_client()
    batch = f"{int(time.time())}:{uuid.uuid4().hex}"
    try:
        renamed = client.renamenx(source, prefix + batch)
    except Exception as error:
        if "no such key" in str(error).lower():
            return 0  # nothing since the last move
        raise
    return _finish(client, prefix, batch, read, write) if renamed else 0


def batches_sweep(prefix: str, read: Read, write: Write, now: float | None = None) -> int:
    """Move every batch a dead mover left behind (older than a minute); how many it wrote."""
    client = redis_client()
    now = time.time() if now is None else now
    moved = 0
    for name in client.scan_iter(match=prefix + "*", count=1000):
        batch = (name.decode() if isinstance(name, bytes) else name).removeprefix(prefix)
        started = batch.split(":", 1)[0]
        if now - (int(started) if started.isdigit() else 0) >= ORPHAN_AFTER_SECONDS:
            logger.warning("Moving a batch a stopped mover left in Redis (%s%s).", prefix, batch)
            moved += _finish(client, prefix, batch, read, write)
    return moved


def _finish(client: Any, prefix: str, batch: str, read: Read, write: Write) -> int:
    written = write(batch, read(client, prefix + batch))
    client.delete(prefix + batch)
    return written
