"""Row 6 of the fault run: every backend terminated, again and again, while keys are created (POST
/keys) and the workspace renamed (PATCH /workspace): no 500, and each key created has its
key.created row."""

import argparse
import collections
import itertools
import threading
import time

from faults.base import WORKSPACE_PATH, Row, say
from faults.processes import call, query, terminate_backends
from faults.setup import Setup


def row_terminated_writes(setup: Setup, seconds: float = 8) -> Row:
    """Row 6: every backend terminated every 0.4 s for `seconds` while 4 threads create keys
    (POST /keys) and 2 rename the workspace (PATCH /workspace): no 500, nothing cut off, and
    each key created has exactly one key.created audit row."""
    stack = setup.stack
    stack.serve()
    statuses: dict[str, collections.Counter] = {
        "POST /keys": collections.Counter(),
        "PATCH /workspace": collections.Counter(),
    }
    answered_201: list[str] = []
    unsure = 0  # 503s that say the change may have been made (the COMMIT's answer was lost)
    lock = threading.Lock()
    stop = threading.Event()
    numbers = itertools.count()

    def writer(kind: str) -> None:
        nonlocal unsure
        while not stop.is_set():
            number = next(numbers)
            port = stack.ports[number % len(stack.ports)]
            if kind == "POST /keys":
                name = f"row6-{number:05d}"
                status, body = call(
                    port,
                    "/api/v1/keys",
                    setup.admin_key,
                    method="POST",
                    body={"name": name, "scopes": ["products:read"]},
                )
            else:
                name = ""
                status, body = call(
                    port,
                    WORKSPACE_PATH,
                    setup.admin_key,
                    method="PATCH",
                    body={"workspaceName": f"Fault Run {number}"},
                )
            with lock:
                statuses[kind][status] += 1
                if status == 201:
                    answered_201.append(name)
                if status == 503 and b"may or may not" in body:
                    unsure += 1

    threads = [
        threading.Thread(target=writer, args=(kind,), daemon=True)
        for kind in ["POST /keys"] * 4 + ["PATCH /workspace"] * 2
    ]
    for thread in threads:
        thread.start()
    terminated = rounds = 0
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        terminated += terminate_backends()
        rounds += 1
        time.sleep(0.4)
    stop.set()
    for thread in threads:
        thread.join(30)
    keys = query("SELECT count(*) FROM api_keys_apikey WHERE name LIKE 'row6-%%'")[0][0]
    audited = query(
        "SELECT count(*) FROM audit_auditevent WHERE action = 'key.created' "
        "AND subject LIKE 'row6-%%'"
    )[0][0]
    all_statuses = statuses["POST /keys"] + statuses["PATCH /workspace"]
    errors = sum(n for status, n in all_statuses.items() if status is not None and status >= 500)
    unavailable = all_statuses.get(503, 0)
    server_errors = errors - unavailable
    cut = all_statuses.get(None, 0)
    say(
        f"row 6: {terminated} backends terminated in {rounds} rounds; POST /keys "
        f"{dict(statuses['POST /keys'])}, PATCH /workspace {dict(statuses['PATCH /workspace'])}"
        f"; keys {keys}, key.created rows {audited}, 201s {len(answered_201)}, unsure 503s "
        f"{unsure}"
    )
    passed = (
        server_errors == 0
        and cut == 0
        and keys == audited
        and len(answered_201) <= keys <= len(answered_201) + unsure
    )

    def text(kind: str) -> str:
        counts = statuses[kind]
        return f"{kind} " + ", ".join(
            f"{n} × {status or 'cut off'}" for status, n in sorted(counts.items(), key=str)
        )

    return Row(
        "6",
        f"every backend of the database terminated, {rounds} rounds over {seconds:g} s "
        f"({terminated} backends), while 4 threads create keys and 2 rename the workspace",
        f"{text('POST /keys')}; {text('PATCH /workspace')}; 5xx other than 503: "
        f"{server_errors}; keys created {keys}, key.created rows {audited} "
        f"({len(answered_201)} answered 201, {unsure} × 503 that may have made theirs)",
        "0 × 500, 0 cut off; one key.created row a key",
        "pass" if passed else "FAIL",
    )


NUMBER = 6


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_terminated_writes(setup)]
