"""Row 11 of the fault run: PostgreSQL restarting, as PgBouncer sees it, under load. PgBouncer's
`[databases]` is pointed at a closed port and reloaded (SIGHUP), which closes its server
connections, the run database's backends are terminated, and 3 s later it is pointed back:
every login fails meanwhile, as in a restart, sparing the PostgreSQL (and the databases) other
runs share. With `server_login_retry = 1` and `query_wait_timeout = 10` (deploy/pgbouncer.ini)
a request waits for the database at most 10 s, then is answered 503 `unavailable` with
Retry-After; the API answers 200 again within a second of its return (it was 15 s of silence
with PgBouncer's default retry)."""

import argparse
import os
import re
import signal
import time

from faults.base import POSTGRES_PORT, SCRATCH, SERVERS, WORKERS_PER_SERVER, Row, say
from faults.processes import Load, free_port, terminate_backends
from faults.setup import Setup

INI = SCRATCH / "pgbouncer" / "pgbouncer.ini"


def _point_at(port: int, pgbouncer_pid: int) -> None:
    text = INI.read_text()
    INI.write_text(
        re.sub(
            r"^\* = host=127\.0\.0\.1 port=\d+$",
            f"* = host=127.0.0.1 port={port}",
            text,
            flags=re.M,
        )
    )
    os.kill(pgbouncer_pid, signal.SIGHUP)  # PgBouncer reloads its configuration


def row_postgres_restart(setup: Setup, outage: float = 3.0) -> Row:
    stack = setup.stack
    stack.serve(pgbouncer=True)
    secret = setup.key("row11-reader")
    # As many clients as app workers (3 servers × 2): none waits in a server's queue behind a
    # worker that waits for the database, so an answer's time is the request's own wait.
    load = Load(stack.ports, secret, threads=SERVERS * WORKERS_PER_SERVER)
    time.sleep(3)
    began = time.monotonic()
    _point_at(free_port(), setup.pgbouncer_pid)  # nothing listens there: every login fails
    terminated = terminate_backends()  # the server connections PgBouncer holds die with it
    say(
        f"row 11: PgBouncer pointed at a closed port for {outage:g} s, {terminated} backends "
        "terminated"
    )
    time.sleep(outage)
    _point_at(POSTGRES_PORT, setup.pgbouncer_pid)
    restored = time.monotonic()
    time.sleep(6)
    load.stop()
    with load.lock:
        results = list(load.results)
        latencies = list(load.latencies)
    during = [status for at, status in results if began <= at <= restored + 1]
    refused = sum(1 for status in during if status == 503)
    cut = sum(1 for _, status in results if status is None)
    other_5xx = sum(
        1 for _, status in results if status is not None and status >= 500 and status != 503
    )
    back = next((at - restored for at, status in results if at > restored and status == 200), None)
    slowest = max((seconds for sent, seconds in latencies if sent >= began - 1), default=0.0)
    say(
        f"row 11: {len(results)} answers, {refused} × 503 during the outage, {other_5xx} other "
        f"5xx, {cut} cut off; 200 again {back if back is None else round(back, 2)} s after; "
        f"slowest answer {slowest:.1f} s"
    )
    passed = cut == 0 and other_5xx == 0 and back is not None and back <= 3 and slowest <= 12
    if outage > 10:  # past PgBouncer's query_wait_timeout: refused, not left waiting
        passed = passed and refused > 0
    return Row(
        "11",
        f"PostgreSQL away for {outage:g} s behind PgBouncer (its [databases] pointed at a "
        "closed port and reloaded, then back) under 6 threads of requests",
        f"{len(results)} answered, {refused} × 503 while it lasted, {other_5xx} other 5xx, "
        f"{cut} cut off; the slowest answer {slowest:.1f} s; 200 again "
        f"{'never' if back is None else f'{back:.2f} s'} after it came back",
        "0 cut off, no 5xx but 503; every answer within 12 s"
        + ("; some 503 (the wait is bounded)" if outage > 10 else "")
        + "; 200 within 3 s of its return",
        "pass" if passed else "FAIL",
    )


NUMBER = 11


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    # A short restart: requests wait for it. A long one: after 10 s they are answered 503.
    return [row_postgres_restart(setup, 3.0), row_postgres_restart(setup, 14.0)]
