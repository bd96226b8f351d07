"""What this process owes Redis: count changes (corrections of what the limiter's call counted,
and requests it did not count) and request log items, sent with the next limiter call or flush,
and given back when Redis cannot take them."""

import logging
import threading
from collections import Counter
from collections.abc import Sequence

logger = logging.getLogger("apps.metering")

# At most this many pending count fields ride on one limiter call; the flush takes the rest.
PENDING_PER_CALL = 32
# Corrections kept while Redis is unreachable (beyond it they are dropped, and logged).
PENDING_MAX = 10_000


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


_pending = _RedisPending()


def redis_pending_add(*changes: tuple[str, int]) -> None:
    """Send these count changes (field, amount) to Redis with the next limiter call or flush."""
    _pending.add(*changes)


def redis_pending_take() -> tuple[list[tuple[str, int]], list[str]]:
    """A limiter call's share of what waits for Redis, count changes and request log items:
    it sends them, or gives them back."""
    return _pending.take(PENDING_PER_CALL), _pending.take_log(PENDING_PER_CALL)


def redis_pending_restore(changes: list[tuple[str, int]], log_items: Sequence[str] = ()) -> None:
    """Give back what a limiter call could not send."""
    if changes:
        _pending.add(*changes)
    for item in log_items:
        _pending.add_log(item)


def redis_log_add(item: str) -> None:
    """Send this request log item to Redis with the next limiter call or flush."""
    _pending.add_log(item)


def redis_pending_take_all() -> tuple[list[tuple[str, int]], list[str]]:
    """Everything that waits for Redis (a flush sends it all, or gives it back)."""
    return _pending.take(), _pending.take_log()


def redis_pending_reset() -> None:
    """Forget what waits (for tests)."""
    redis_pending_take_all()
