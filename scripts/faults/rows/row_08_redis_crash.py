"""Row 8 of the fault run: a Redis crash under load: the run's own Redis (append-only, `appendfsync
always`, as deploy/redis.conf sets production's) SIGKILLed and restarted from its file while 8
threads send requests: every answered request counted and in the request log (by Request-Id)."""

import argparse
import time

from faults.base import Row, say
from faults.processes import Load
from faults.setup import (
    REDIS_AWAY,
    Setup,
    counted_for,
    key_id,
    log_lines,
    logged_ids,
    settled_in_logs,
)


def row_redis_crash(setup: Setup, before: float = 4, outage: float = 1, after: float = 4) -> Row:
    """Row 8: the app servers' Redis (the run's own) SIGKILLed under load and restarted from
    its append-only file: every answered request counted and in the request log."""
    stack = setup.stack
    own = setup.redis_of_its_own()
    name = "row8-reader"
    secret = setup.key(name)
    key = key_id(name)
    load = Load(stack.ports, secret, threads=8)
    time.sleep(before)
    sent_before = load.done()
    own.kill()
    say(f"row 8: Redis on {own.port} SIGKILLed after {sent_before} answers")
    time.sleep(outage)
    own.start()
    time.sleep(after)
    load.stop()
    statuses = load.statuses()
    cut = statuses.pop(None, 0)
    answered = sum(statuses.values())
    answered_ids = set(load.request_ids)
    moved = stack.manage("movebatches")
    say(f"row 8: answers {dict(statuses)}, {cut} cut off; movebatches: {moved}")
    # The app processes' own flushes (every 5 s) write what waited in their buffers while
    # Redis was away; bounded wait until every answered request is logged and counted.
    deadline = time.monotonic() + 45
    while True:
        logged, repeated = logged_ids(key)
        counted = counted_for(key)
        missing = answered_ids - logged
        if (not missing and counted >= answered) or time.monotonic() > deadline:
            break
        time.sleep(1)
    extra_logged = len(logged - answered_ids)  # requests whose answers never came back
    lost_counts = max(0, answered - counted)
    over = max(0, counted - answered - cut)
    redis_away = log_lines("server-*", REDIS_AWAY)
    settled, ran = settled_in_logs()
    say(
        f"row 8: request log {len(logged)} rows for {answered} answered ({len(missing)} "
        f"answered missing, {repeated} repeated, {extra_logged} without an answer); counted "
        f"{counted}; servers logged '{REDIS_AWAY}' {redis_away}×; settled {settled} requests "
        f"whose limiter call failed, {ran} of them run in Redis before the crash"
    )
    passed = (
        not missing
        and repeated == 0
        and extra_logged <= cut
        and lost_counts == 0
        and over == 0
        and answered > 0
    )
    return Row(
        "8",
        f"the app servers' Redis (append-only, fsync always) SIGKILLed after {before:g} s of "
        f"8 threads of requests and restarted {outage:g} s later",
        f"{answered} answered ({cut} cut off): {len(missing)} missing from the request log, "
        f"{repeated} logged twice, {extra_logged} logged without an answer; {counted} counted "
        f"in PostgreSQL ({lost_counts} lost, {over} more than sent); {settled} requests whose "
        f"limiter call failed settled by their mark, {ran} of them run by Redis before it died",
        "0 missing, 0 twice; counts = answered (+ cut off)",
        "pass" if passed else "FAIL",
    )


NUMBER = 8


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_redis_crash(setup)]
