"""Row 7 of the fault run: SIGHUP (a graceful reload) to one app server's master under load: no
request past the client's 15 s timeout, none cut off, the p99 latency bounded."""

import argparse
import signal
import time

from faults.base import Row, say
from faults.processes import Load
from faults.setup import Setup


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


def row_reload(setup: Setup, bound: float = 2.0) -> Row:
    """Row 7: SIGHUP to the first app server's master under load (6 threads on it); latency
    before and after, requests cut off or past the client's 15 s timeout."""
    stack = setup.stack
    stack.serve()
    secret = setup.key("row7-reader")
    port = stack.ports[0]
    master = stack.servers[0]
    old_workers = set(stack.server_workers(0))
    load = Load([port], secret, threads=6)
    time.sleep(4)
    reloaded = time.monotonic()
    master.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and set(stack.server_workers(0)) & old_workers:
        time.sleep(0.1)  # until every old worker has stopped
    swapped = time.monotonic() - reloaded
    time.sleep(4)
    load.stop()
    with load.lock:
        before = [d for sent, d in load.latencies if sent < reloaded]
        after = [d for sent, d in load.latencies if sent >= reloaded - 1]
    statuses = load.statuses()
    cut = statuses.get(None, 0)
    errors = sum(n for status, n in statuses.items() if status is not None and status >= 500)
    late = sum(1 for d in after if d >= 15)
    p99 = percentile(after, 0.99)
    say(
        f"row 7: old workers gone {swapped:.1f} s after SIGHUP; before p50 "
        f"{percentile(before, 0.5) * 1000:.0f} ms p99 {percentile(before, 0.99) * 1000:.0f} "
        f"ms; across the reload p50 {percentile(after, 0.5) * 1000:.0f} ms p99 "
        f"{p99 * 1000:.0f} ms max {max(after, default=0) * 1000:.0f} ms; {dict(statuses)}"
    )
    passed = cut == 0 and errors == 0 and late == 0 and p99 <= bound and swapped < 30
    return Row(
        "7",
        "SIGHUP (graceful reload) to an app server's master under 6 threads of requests",
        f"latency before p50 {percentile(before, 0.5) * 1000:.0f} ms, p99 "
        f"{percentile(before, 0.99) * 1000:.0f} ms; from 1 s before the reload until 4 s "
        f"after its old workers stopped ({swapped:.1f} s): p50 "
        f"{percentile(after, 0.5) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max "
        f"{max(after, default=0) * 1000:.0f} ms; {late} past 15 s, {cut} cut off, "
        f"{errors} × 5xx of {sum(statuses.values())}",
        f"0 past 15 s, 0 cut off, 0 × 5xx; p99 ≤ {bound * 1000:.0f} ms",
        "pass" if passed else "FAIL",
    )


NUMBER = 7


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_reload(setup)]
