"""Row 13 of the fault run: the database hangs on connections already open. The run's PgBouncer
is stopped (SIGSTOP) for 20 s under load, then continued: the kernel keeps accepting the bytes,
so nothing but the app's own bound sees the silence. Every request is answered within
DATABASE_ANSWER_TIMEOUT_SECONDS (10) and a little, 503 `unavailable` with Retry-After while it
lasts; `/livez` is answered 200 throughout (a liveness probe must not restart a healthy server
for its database); the API answers 200 again within seconds of PgBouncer's return. Before the
bound, every worker waited until gunicorn's timeout killed it, and `/livez` with them."""

import argparse
import contextlib
import os
import signal
import threading
import time

from faults.base import SERVERS, WORKERS_PER_SERVER, Row, say
from faults.processes import Load, call
from faults.setup import Setup

HANG_SECONDS = 20.0
ANSWER_BOUND = 10.0  # the app's DATABASE_ANSWER_TIMEOUT_SECONDS default
SLACK = 2.0  # the answer's own time, and a worker busy with the request before it


class LivenessProbe:
    """`/livez` on every server in turn, every half second, in the background: (status,
    seconds) of each."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.answers: list[tuple[int | None, float]] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        number = 0
        while not self.stopping.is_set():
            sent = time.monotonic()
            status, _ = call(self.ports[number % len(self.ports)], "/livez", timeout=15.0)
            self.answers.append((status, time.monotonic() - sent))
            number += 1
            self.stopping.wait(0.5)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(20)


def row_database_hang(setup: Setup) -> Row:
    stack = setup.stack
    stack.serve(pgbouncer=True)
    secret = setup.key("row13-reader")
    # Fewer clients than app workers, as a load balancer's health checks find a worker free
    # beside the traffic: the probe measures the app, not a queue of its own.
    load = Load(stack.ports, secret, threads=SERVERS * WORKERS_PER_SERVER - 2, pinned=True)
    time.sleep(3)
    probe = LivenessProbe(stack.ports)
    began = time.monotonic()
    os.kill(setup.pgbouncer_pid, signal.SIGSTOP)
    say(f"row 13: PgBouncer stopped (SIGSTOP) for {HANG_SECONDS:g} s under load")
    try:
        time.sleep(HANG_SECONDS)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(setup.pgbouncer_pid, signal.SIGCONT)
    resumed = time.monotonic()
    time.sleep(6)
    load.stop()
    probe.stop()
    outage = load.outage(began, resumed)
    live = [status for status, _ in probe.answers]
    live_ok = sum(1 for status in live if status == 200)
    live_slowest = max((seconds for _, seconds in probe.answers), default=0.0)
    probes = f"`/livez` {live_ok} of {len(live)} × 200, the slowest {live_slowest:.1f} s"
    say(f"row 13: {outage}; {probes}")
    bound = ANSWER_BOUND + SLACK
    passed = (
        outage.served_through(bound)
        and outage.refused > 0
        and live
        and live_ok == len(live)
        and live_slowest <= bound
    )
    return Row(
        "13",
        f"the database hangs: the run's PgBouncer stopped (SIGSTOP) for {HANG_SECONDS:g} s, "
        f"connections open, under {SERVERS * WORKERS_PER_SERVER - 2} threads of requests and a "
        "`/livez` probe every 0.5 s",
        f"{outage} it answered again; {probes}",
        f"0 cut off, no 5xx but 503, some 503; every answer and probe within {bound:g} s "
        "(the 10 s bound); `/livez` always 200; 200 within 3 s of its return",
        "pass" if passed else "FAIL",
    )


NUMBER = 13


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figure."""
    return [row_database_hang(setup)]
