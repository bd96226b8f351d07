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


def row_postgres_restart(setup: Setup, seconds: float = 3.0) -> Row:
    stack = setup.stack
    stack.serve(pgbouncer=True)
    secret = setup.key("row11-reader")
    # As many clients as app workers (3 servers × 2), two to a server: none waits in a server's
    # queue behind a worker that waits for the database, so an answer's time is the request's
    # own wait. (Unpinned, one run in three saw a request queued 4.3 s behind a 10 s wait.)
    load = Load(stack.ports, secret, threads=SERVERS * WORKERS_PER_SERVER, pinned=True)
    time.sleep(3)
    began = time.monotonic()
    _point_at(free_port(), setup.pgbouncer_pid)  # nothing listens there: every login fails
    terminated = terminate_backends()  # the server connections PgBouncer holds die with it
    say(
        f"row 11: PgBouncer pointed at a closed port for {seconds:g} s, {terminated} backends "
        "terminated"
    )
    time.sleep(seconds)
    _point_at(POSTGRES_PORT, setup.pgbouncer_pid)
    restored = time.monotonic()
    time.sleep(6)
    load.stop()
    outage = load.outage(began, restored)
    say(f"row 11: {outage}")
    passed = outage.served_through(12)
    if seconds > 10:  # past PgBouncer's query_wait_timeout: refused, not left waiting
        passed = passed and outage.refused > 0
    return Row(
        "11",
        f"PostgreSQL away for {seconds:g} s behind PgBouncer (its [databases] pointed at a "
        "closed port and reloaded, then back) under 6 threads of requests",
        f"{outage} it came back",
        "0 cut off, no 5xx but 503; every answer within 12 s"
        + ("; some 503 (the wait is bounded)" if seconds > 10 else "")
        + "; 200 within 3 s of its return",
        "pass" if passed else "FAIL",
    )


NUMBER = 11


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    # A short restart: requests wait for it. A long one: after 10 s they are answered 503.
    return [row_postgres_restart(setup, 3.0), row_postgres_restart(setup, 14.0)]
