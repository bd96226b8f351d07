"""Row 10 of the fault run: a key with a quota under load while that Redis is SIGKILLed at half its
allowance and restarted: what was left goes on, not a fresh allowance (in all, within one
request a worker of the allowance)."""

import argparse
import time

from faults.base import ALL_SCOPES, SERVERS, WORKERS_PER_SERVER, WORKSPACE_PATH, Row, say
from faults.processes import Load, call
from faults.setup import Setup, key_id


def row_quota_redis_crash(setup: Setup, allowance: int = 600, outage: float = 1) -> Row:
    """Row 10: a key with a quota under load from 8 threads while the app servers' Redis (the
    run's own, append-only) is SIGKILLed at about half the allowance and restarted: what the
    key is answered in all, against its allowance."""
    stack = setup.stack
    own = setup.redis_of_its_own()
    name = "row10-quota"
    secret = setup.key(name)
    manager = setup.key("row10-manager", ALL_SCOPES)
    key = key_id(name)
    status, body = call(
        stack.ports[0],
        f"/api/v1/keys/{key}/quota",
        manager,
        method="PATCH",
        body={"requests": allowance, "period": "month"},
    )
    if status != 200:
        raise RuntimeError(f"row 10: the quota was not set ({status}): {body[:200]!r}")
    load = Load(stack.ports, secret, threads=8)
    deadline = time.monotonic() + 60
    while load.statuses()[200] < allowance // 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    before = load.statuses()[200]
    own.kill()
    say(f"row 10: Redis on {own.port} SIGKILLed after {before} requests answered 200")
    time.sleep(outage)
    own.start()
    # Until the allowance is spent on every server: 200 refusals in a row.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with load.lock:
            last = [status for _, status in load.results[-200:]]
        if len(last) == 200 and all(status == 429 for status in last):
            break
        time.sleep(0.2)
    load.stop()
    statuses = load.statuses()
    answered, cut = statuses[200], statuses.get(None, 0)
    refused = statuses[429]
    _, spent = call(stack.ports[1], WORKSPACE_PATH, secret)
    quota_exceeded = b"quota-exceeded" in spent
    say(f"row 10: answers {dict(statuses)}; the next answer says quota-exceeded: {quota_exceeded}")
    # What was left after the restart, not a fresh allowance: in all, within one request a
    # worker of it either way. Short: a request whose script ran as Redis died is counted in
    # Redis and again in PostgreSQL. Past: what other workers admitted after the last read of
    # the worker that counts on in PostgreSQL (docs/operations.md, "Quotas").
    off = answered - allowance
    passed = abs(off) <= SERVERS * WORKERS_PER_SERVER + cut and quota_exceeded
    side = f"{off} past" if off > 0 else f"{-off} short of"
    return Row(
        "10",
        f"a key with a quota of {allowance} a month under 8 threads; the app servers' Redis "
        f"(append-only, fsync always) SIGKILLed after {before} answers and restarted "
        f"{outage:g} s later",
        f"{answered} answered 200 in all ({side} the allowance), "
        f"{refused} refused with 429, {cut} cut off; then quota-exceeded",
        f"what was left, not a fresh {allowance}: within one request a worker of {allowance}",
        "pass" if passed else "FAIL",
    )


NUMBER = 10


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_quota_redis_crash(setup)]
