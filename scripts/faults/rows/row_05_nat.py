"""Row 5 of the fault run: a client behind a NAT that keeps sending a revoked key while a valid key
is used from the same address: valid requests refused, bad ones answered 429 after the block."""

import argparse
import collections
import math
import time

from faults.base import AUTH_FAILURES_PER_MINUTE, NAT_ADDRESS, Row, say
from faults.processes import Load
from faults.setup import REDIS_AWAY, Setup, log_lines


def row_nat(setup: Setup, seconds: float = 10) -> Row:
    """Row 5: a revoked key sent fast from a NAT's address while a valid key is used from
    the same address."""
    stack = setup.stack
    stack.serve()
    valid = setup.key("row5-valid")
    revoked = setup.key("row5-revoked")
    stack.manage("revokeapikey", revoked)
    behind_nat = {"X-Forwarded-For": NAT_ADDRESS}
    redis_away = log_lines("server-*", REDIS_AWAY)
    bad = Load(stack.ports, revoked, threads=6, headers=behind_nat)
    good = Load(stack.ports, valid, threads=2, headers=behind_nat)
    time.sleep(seconds)
    bad.stop()
    good.stop()
    redis_away = log_lines("server-*", REDIS_AWAY) - redis_away
    refused = sum(n for status, n in good.statuses().items() if status != 200)
    blocked = [t for t, status in bad.results if status == 429]
    if not blocked:
        figure = f"valid refused {refused} of {good.done()}; no 429 in {bad.done()} bad requests"
        return Row("5", "revoked key from a NAT", figure, "0; 429 after the block", "FAIL")
    block_at = min(blocked)
    after = collections.Counter(status for t, status in bad.results if t >= block_at)
    span = max(t for t, _ in bad.results) - block_at
    # After the block the bucket refills at the limit's rate: that many 401s may pass.
    allowance = math.ceil(span * AUTH_FAILURES_PER_MINUTE / 60) + 2
    before = collections.Counter(status for t, status in bad.results if t < block_at)
    # Before it, the address's bucket: the limit, plus what refilled meanwhile.
    ramp = block_at - min(t for t, _ in bad.results)
    allowance_before = (
        AUTH_FAILURES_PER_MINUTE + math.ceil(ramp * AUTH_FAILURES_PER_MINUTE / 60) + 2
    )
    say(
        f"row 5: valid {dict(good.statuses())}; bad before the block {dict(before)}, "
        f"after {dict(after)} over {span:.1f} s; servers logged '{REDIS_AWAY}' {redis_away}×"
    )
    figure = (
        f"valid-key requests refused {refused} of {good.done()}; bad-key requests after the "
        f"block answered 429: {after.get(429, 0)} of {sum(after.values())} "
        f"({after.get(401, 0)} × 401 as the bucket refilled; {sum(before.values())} before)"
        + (f"; servers logged '{REDIS_AWAY}' {redis_away}× meanwhile" if redis_away else "")
    )
    others = sum(n for status, n in after.items() if status not in (401, 429))
    passed = (
        refused == 0
        and before.get(401, 0) <= allowance_before
        and after.get(401, 0) <= allowance
        and others == 0
    )
    return Row(
        "5",
        f"revoked key sent from a NAT address ({NAT_ADDRESS}, X-Forwarded-For) by 6 threads "
        "while a valid key is used by 2",
        figure,
        f"0; 429 after the first {AUTH_FAILURES_PER_MINUTE} (then ≤ {AUTH_FAILURES_PER_MINUTE}"
        "/min of 401 as the bucket refills)",
        "pass" if passed else "FAIL",
    )


NUMBER = 5


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_nat(setup)]
