"""Row 1 of the fault run: every backend of the database terminated, again and again for a few
seconds, while the two workers deliver ~300 webhook events and readers call the API."""

import argparse
import time

from faults.base import Row, say
from faults.processes import Load, db_now, query, terminate_backends
from faults.setup import Setup, create_keys, log_lines, webhook_tasks


def row_terminated_backends(setup: Setup, events: int = 300, seconds: float = 8) -> Row:
    """Row 1: pg_terminate_backend of every backend of the database, again and again for
    `seconds`, while two workers deliver `events` webhook events and readers call the API."""
    stack, receiver = setup.stack, setup.receiver
    stack.serve()
    stack.stop_workers()  # the queue is filled first, then worked under the fault
    since = db_now()
    names = [f"row1-{number:04d}" for number in range(events)]
    created = create_keys(setup, names)
    say(f"row 1: {created} keys created over the API, {created} key.created events queued")
    readers = Load(stack.ports, setup.key("reader-1"), threads=3, pause=0.02)
    receiver.delay = 0.03  # so that two workers need well over `seconds` for the queue
    stack.ensure_workers(2)
    worker_names = sorted(stack.alive_workers())
    deadline = time.monotonic() + 60
    while not receiver.key_names("row1-") and time.monotonic() < deadline:
        time.sleep(0.1)  # the fault starts once the workers deliver
    terminated = rounds = 0
    before = len(receiver.key_names("row1-"))
    fault_ends = time.monotonic() + seconds
    while time.monotonic() < fault_ends:
        terminated += terminate_backends()
        rounds += 1
        time.sleep(0.4)
    during = len(receiver.key_names("row1-")) - before
    say(
        f"row 1: {terminated} backends terminated in {rounds} rounds over {seconds:g} s; "
        f"{during} deliveries received meanwhile ({before} before)"
    )
    # Then until the queue is empty and nothing more arrives (a retry is due 5 s after a
    # failed attempt), at most 90 s.
    deadline = time.monotonic() + 90
    last_count, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = len(receiver.key_names("row1-"))
        if count != last_count:
            last_count, last_change = count, time.monotonic()
        open_tasks = sum(n for s, n in webhook_tasks(since).items() if s in ("READY", "RUNNING"))
        if not open_tasks and (count >= created or time.monotonic() - last_change > 10):
            break
        time.sleep(1)
    readers.stop()
    receiver.delay = 0.0
    alive = [name for name in worker_names if stack.workers[name].poll() is None]
    tasks = webhook_tasks(since)
    received = len(receiver.key_names("row1-"))
    # What became of the events not received: a delivery row still pending is sent again by
    # the webhook-sweep job once 5 minutes stale; an event without a row is lost.
    rows = dict(
        query(
            "SELECT payload::jsonb -> 'data' -> 'key' ->> 'name', status "
            "FROM webhooks_webhookdelivery WHERE payload::jsonb ->> 'type' = 'key.created'"
        )
    )
    missing = set(names) - receiver.key_names("row1-")
    written = sum(1 for name in names if name in rows)  # every delivery that happened, logged
    attempts = query(
        "SELECT count(*) FROM webhooks_webhookattempt a JOIN webhooks_webhookdelivery d "
        "ON d.id = a.delivery_id WHERE d.payload::jsonb ->> 'type' = 'key.created' "
        "AND d.payload::jsonb -> 'data' -> 'key' ->> 'name' LIKE 'row1-%%'"
    )[0][0]
    pending = sum(1 for name in missing if rows.get(name) == "pending")
    rowless = sum(1 for name in missing if name not in rows)
    reads = readers.statuses()
    errors = sum(n for status, n in reads.items() if status is not None and status >= 500)
    cut = reads.get(None, 0)
    lost_db = sum(log_lines(name, "lost the database") for name in worker_names)
    logged = sum(log_lines(name, " ERROR ") for name in worker_names)
    say(
        f"row 1: workers alive {len(alive)}/{len(worker_names)} (worker logs: 'lost the "
        f"database' {lost_db}×, ERROR {logged}×), tasks {dict(tasks)}, received "
        f"{received}/{created} (of the rest: {pending} pending, {rowless} without a delivery "
        f"row), delivery rows {written}, attempts {attempts}, reads {dict(reads)}"
    )
    total_tasks = sum(tasks.values())
    passed = (
        len(alive) == len(worker_names)
        and tasks.get("SUCCESSFUL", 0) == total_tasks
        and received == created == events
        and written == events
        and attempts >= events
        and errors == cut == 0
    )
    return Row(
        "1",
        f"every backend of the database terminated, {rounds} rounds over {seconds:g} s "
        f"({terminated} backends), while 2 workers deliver {events} webhook events and "
        "3 readers call the API",
        f"workers alive {len(alive)} of {len(worker_names)}; tasks completed "
        f"{tasks.get('SUCCESSFUL', 0)} of {total_tasks}"
        + "".join(f", {s.lower()} {n}" for s, n in sorted(tasks.items()) if s != "SUCCESSFUL")
        + f"; deliveries received {received} of {created}, written {written} ({attempts} "
        "attempts)"
        + (f" ({pending} pending till the sweep, {rowless} lost)" if missing else "")
        + f"; 5xx {errors} of "
        f"{sum(reads.values())} reads ({cut} cut off)",
        "2 of 2; all; all, each written; 0",
        "pass" if passed else "FAIL",
    )


NUMBER = 1


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_terminated_backends(setup)]
