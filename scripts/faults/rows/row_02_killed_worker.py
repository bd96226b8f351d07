"""Row 2 of the fault run: a worker SIGKILLed while a delivery is in flight (the receiver holds
it): seconds until the other worker delivers it (the `tasks-recover` job takes back a silent
worker's tasks)."""

import argparse
import os
import signal
import time

from faults.base import Row, say
from faults.processes import query
from faults.setup import Setup, create_keys


def row_killed_worker(setup: Setup) -> Row:
    """Row 2: a task worker SIGKILLed while its delivery is in flight; seconds until the
    other worker's delivery arrives."""
    stack, receiver = setup.stack, setup.receiver
    stack.serve()
    stack.ensure_workers(2)
    receiver.hold_next('"row2-probe"')
    created = create_keys(setup, ["row2-probe"])
    if not created or not receiver.held.wait(30):
        return Row(
            "2", "task worker SIGKILLed mid-delivery", "no delivery started", "≤ 120 s", "FAIL"
        )
    message_id = receiver.held_id or ""
    sender = None
    for _ in range(20):  # the task's row says which worker runs it
        rows = query(
            "SELECT worker_ids FROM django_tasks_database_dbtaskresult "
            "WHERE status = 'RUNNING' AND task_path LIKE 'apps.webhooks.%%'"
        )
        running = [ids[-1] for (ids,) in rows if ids and ids[-1] in stack.workers]
        if running:
            sender = running[0]
            break
        time.sleep(0.25)
    if sender is None:
        receiver.release.set()
        return Row("2", "task worker SIGKILLed mid-delivery", "sender not found", "≤ 120 s", "FAIL")
    os.kill(stack.workers[sender].pid, signal.SIGKILL)
    killed_at = time.monotonic()
    receiver.release.set()
    say(f"row 2: {sender} SIGKILLed while delivering {message_id}; waiting for the other worker")
    deadline = killed_at + 180
    next_note = killed_at + 20
    while message_id not in receiver.received and time.monotonic() < deadline:
        if time.monotonic() > next_note:
            say(f"row 2: {time.monotonic() - killed_at:.0f} s since the kill, not delivered yet")
            next_note += 20
        time.sleep(0.2)
    arrival = receiver.received.get(message_id)
    stack.ensure_workers(2)
    if arrival is None:
        figure, passed = "not delivered within 180 s", False
    else:
        seconds = arrival[0] - killed_at
        figure, passed = f"{seconds:.1f} s from the kill to the delivery", seconds <= 120
    say(f"row 2: {figure}")
    return Row(
        "2",
        "task worker SIGKILLed mid-delivery (the receiver held the request)",
        figure,
        "≤ 120 s",
        "pass" if passed else "FAIL",
    )


NUMBER = 2


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_killed_worker(setup)]
