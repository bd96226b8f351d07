"""What this process owes Redis: count changes (corrections of what the limiter's call counted,
and requests it did not count) and request log items, sent with the next limiter call or flush,
and given back when Redis cannot take them; and the requests whose limiter call failed in a
way that leaves unknown whether Redis ran it (unsettled: apps/metering/settling.py)."""

import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

logger = logging.getLogger("apps.metering")

# At most this many pending count fields ride on one limiter call; the flush takes the rest.
PENDING_PER_CALL = 32
# Corrections kept while Redis is unreachable (beyond it they are dropped, and logged).
PENDING_MAX = 10_000
# How long Redis keeps a request's mark (`noted_key`): a request whose limiter call failed can be
# settled for this long; after it, the request is counted and logged as if the call never ran.
NOTED_SECONDS = 300


def noted_key(request_id: str) -> str:
    """The mark in Redis that says the limiter's call of this request ran, and how."""
    return f"gatehouse:noted:{request_id}"


@dataclass
class Unsettled:
    """A request whose limiter call failed, perhaps after Redis ran it: the count fields it
    would have added to as allowed and as refused, what rode on it, and, once the answer is
    known, the request's own count field, log completion and whole log entry."""

    mark: str
    count_allowed: str
    count_refused: str
    changes: list[tuple[str, int]]
    log_items: list[str]
    failed_at: float = field(default_factory=time.time)
    answered: tuple[str, str, str] | None = None  # final count field, `C|…` item, `F|…` item


class _RedisPending:
    """Count changes of this process not yet in Redis: corrections of what the limiter counted,
    and requests it did not count (no limit, Redis was away)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.amounts: Counter[str] = Counter()
        self.log_items: list[str] = []
        self.unsettled: dict[str, Unsettled] = {}

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


def redis_unsettled_add(
    mark: str,
    count_allowed: str,
    count_refused: str,
    changes: list[tuple[str, int]],
    log_items: list[str],
) -> None:
    """Keep a request whose limiter call failed (with what rode on it) until it is settled."""
    with _pending.lock:
        _pending.unsettled[mark] = Unsettled(mark, count_allowed, count_refused, changes, log_items)


def redis_unsettled_answer(mark: str, final: str, completion: str, entry: str) -> bool:
    """Give an unsettled request its answer (count field, completion and whole entry); False
    when the request is not unsettled."""
    with _pending.lock:
        unsettled = _pending.unsettled.get(mark)
        if unsettled is None:
            return False
        unsettled.answered = (final, completion, entry)
        return True


def redis_unsettled_take() -> list[Unsettled]:
    """The unsettled requests that have their answer (the rest wait for it)."""
    if not _pending.unsettled:  # read without the lock: the common case
        return []
    with _pending.lock:
        taken = [u for u in _pending.unsettled.values() if u.answered is not None]
        for unsettled in taken:
            del _pending.unsettled[unsettled.mark]
    return taken


def redis_unsettled_restore(unsettled: Sequence[Unsettled]) -> None:
    """Give back what could not be settled."""
    with _pending.lock:
        for one in unsettled:
            _pending.unsettled[one.mark] = one


def redis_unsettled_give_up(now: float, older_than: float = NOTED_SECONDS) -> int:
    """Treat answered requests unsettled for `older_than` seconds as if their limiter call never
    ran (their marks have expired: Redis can no longer tell): what rode on them, their count
    and their whole entry wait like any other. How many."""
    answered = redis_unsettled_take()
    given_up = [u for u in answered if now - u.failed_at >= older_than]
    redis_unsettled_restore([u for u in answered if now - u.failed_at < older_than])
    for unsettled in given_up:
        assert unsettled.answered is not None
        final, _completion, entry = unsettled.answered
        redis_pending_restore([*unsettled.changes, (final, 1)], [*unsettled.log_items, entry])
    return len(given_up)


def redis_pending_reset() -> None:
    """Forget what waits (for tests)."""
    redis_pending_take_all()
    with _pending.lock:
        _pending.unsettled.clear()
