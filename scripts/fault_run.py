"""A scripted fault run against a production-like Gatehouse on this machine, which prints a
figure for each fault and ends with a Markdown table.

    .venv/bin/python scripts/fault_run.py [--only 1,3] [--requests 3000] [--ports P1,...,P6]

It needs Debian's `pgbouncer` and `redis-server` (it says so at once when one is missing) and
the local PostgreSQL, and sets up everything else itself, all of it its own: a PgBouncer
(scripts/start_pgbouncer.sh, on a port of its own, its files in the scratch folder), a Redis
(append-only, fsync always, as deploy/redis.conf sets production's; its files removed at the
end, so nothing it wrote is left behind), a fresh PostgreSQL database `gatehouse_faults`
($FAULT_RUN_DATABASE when set; dropped at the next run only if a run made it, which its comment
says: a database of yours of that name is refused, never dropped), its logs in /tmp/faults
($FAULT_RUN_SCRATCH), a workspace, keys and a webhook endpoint made with the operator commands,
a loopback webhook receiver (a threaded http.server in this process), three gunicorn servers
(2 sync workers each, DEBUG off) through PgBouncer in transaction pooling, and two
`manage.py worker` processes. Then the rows:

1. every backend of the database terminated, again and again for a few seconds, while the two
   workers deliver ~300 webhook events and readers call the API;
2. a worker SIGKILLed while a delivery is in flight (the receiver holds it): seconds until the
   other worker delivers it (the `tasks-recover` job takes back a silent worker's tasks);
3. a gunicorn worker SIGKILLed under N requests of one key: counts lost in the usage tables,
   with REDIS_URL and without;
4. PostgreSQL connections per app worker process, directly and through PgBouncer;
5. a client behind a NAT that keeps sending a revoked key while a valid key is used from the
   same address: valid requests refused, bad ones answered 429 after the block;
6. every backend terminated, again and again, while keys are created (POST /keys) and the
   workspace renamed (PATCH /workspace): no 500, and each key created has its key.created row;
7. SIGHUP (a graceful reload) to one app server's master under load: no request past the
   client's 15 s timeout, none cut off, the p99 latency bounded;
8. a Redis crash under load: the run's own Redis (append-only, `appendfsync always`, as
   deploy/redis.conf sets production's) SIGKILLed and restarted from its file while 8 threads
   send requests: every answered request counted and in the request log (by Request-Id);
9. a mover SIGKILLed between taking its batches and writing them (`batch_take` in a
   `manage.py shell`), then that Redis SIGKILLed and restarted inside the 5 s lease: seconds
   until the batches' rows are in PostgreSQL (≤ 15 s), none written twice;
10. a key with a quota under load while that Redis is SIGKILLed at half its allowance and
   restarted: what was left goes on, not a fresh allowance (in all, within one request a
   worker of the allowance);
11. PostgreSQL away behind PgBouncer for 3 s and for 14 s (its `[databases]` pointed at a
   closed port and reloaded, then back): answered within the 10 s wait bound, 503 past it;
12. today's request-log partition dropped under load: made again, no entry lost;
13. the database hung (the run's PgBouncer SIGSTOPped 20 s, connections open) under load:
   every request answered within DATABASE_ANSWER_TIMEOUT_SECONDS, `/livez` 200 throughout.

Rows 8, 9 and 10 SIGKILL and restart the run's own Redis, never the machine's.

Each row is a module of scripts/faults/rows/ (its number, what it does, how it is measured);
a new row is a new file there. The stack it runs against is scripts/faults/.

It serves only on the ports it is told to (--ports: the three app servers', the webhook
receiver's, its PgBouncer's and its Redis'), or on free ones it picks and prints.

Every process it starts is stopped at the end (their process groups), and every wait is
bounded; the whole run takes about five minutes, and exits 1 when a row fails. Logs are in
/tmp/faults/. The database is left for inspection and dropped at the next run.
"""

import argparse
import contextlib
import importlib
import os
import pkgutil
import shutil
import signal
import sys
import time
from types import ModuleType

import faults.rows
from faults.base import SCRATCH, SERVERS, STARTED, Row, say
from faults.processes import port_open
from faults.setup import set_up


def _row_modules() -> list[ModuleType]:
    """Every row of scripts/faults/rows/, in the order of their numbers."""
    modules = [
        importlib.import_module(f"faults.rows.{info.name}")
        for info in pkgutil.iter_modules(faults.rows.__path__)
    ]
    return sorted(modules, key=lambda module: module.NUMBER)


ROW_MODULES = _row_modules()


def table(rows: list[Row]) -> str:
    lines = ["| row | fault | figure | required | result |", "|---|---|---|---|---|"]
    for row in rows:
        cells = [row.row, row.fault, row.figure, row.required, row.result]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main() -> int:
    numbers = [str(row.NUMBER) for row in ROW_MODULES]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", default=",".join(numbers), help="rows to run, e.g. 1,3 (default: every row)"
    )
    parser.add_argument("--requests", type=int, default=3000, help="row 3's requests (3000)")
    parser.add_argument(
        "--ports",
        default="",
        help="the six ports to serve on: the three app servers', the webhook receiver's, the "
        "run's PgBouncer's and its Redis', e.g. 18001,18002,18003,18004,18005,18006 (default: "
        "free ones)",
    )
    options = parser.parse_args()
    wanted = {part.strip() for part in options.only.split(",") if part.strip()}
    if not wanted <= set(numbers):
        parser.error(f"--only takes row numbers: {', '.join(numbers)}")
    ports: list[int] | None = None
    if options.ports:
        try:
            ports = [int(part) for part in options.ports.split(",")]
        except ValueError:
            parser.error("--ports takes six port numbers separated by commas")
        if len(ports) != SERVERS + 3 or len(set(ports)) != len(ports):
            parser.error(
                "--ports takes six different ports: three app servers, the receiver, "
                "PgBouncer and Redis"
            )
        if taken := [port for port in ports if port_open(port)]:
            parser.error(f"something already listens on {', '.join(map(str, taken))}")
    # SIGTERM and SIGHUP (timeout, a closed terminal) unwind like Ctrl-C: the cleanup runs.
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda signum, _frame: sys.exit(128 + signum))
    rows: list[Row] = []
    setup = None
    load_at_start = os.getloadavg()
    try:
        setup = set_up(ports)
        for row in ROW_MODULES:
            if str(row.NUMBER) in wanted:
                rows += row.run(setup, options)
    finally:
        if setup is not None:
            setup.stack.stop()
            setup.receiver.stop()
            with contextlib.suppress(ProcessLookupError):
                os.kill(setup.pgbouncer_pid, signal.SIGTERM)
            shutil.rmtree(setup.own_redis.dir, ignore_errors=True)  # nothing of it left behind
            say("stopped every process this run started; its Redis' files removed")
    print()
    print(table(rows))
    busy = ", ".join(f"{value:.2f}" for value in load_at_start)
    now = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"\nLoad average (1, 5, 15 min) at the start: {busy}; at the end: {now}; "
        f"{os.cpu_count()} CPUs."
    )
    print(f"Took {time.monotonic() - STARTED:.0f} s. Logs: {SCRATCH}/")
    return 0 if all(row.result != "FAIL" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
