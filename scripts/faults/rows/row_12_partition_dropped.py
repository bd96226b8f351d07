"""Row 12 of the fault run: today's partition of the request log dropped under running app
servers (an operator's mistake, a restore): the next flush makes it again, and every request
answered after the drop is in the request log; none is lost, none logged twice."""

import argparse
import time
from datetime import UTC, datetime

from faults.base import Row, say
from faults.processes import Load, query
from faults.setup import Setup, key_id, logged_ids


def row_partition_dropped(setup: Setup) -> Row:
    stack = setup.stack
    stack.serve()
    name = "row12-reader"
    secret = setup.key(name)
    key = key_id(name)
    load = Load(stack.ports, secret, threads=8)
    time.sleep(4)
    partition = f"request_log_p{datetime.now(UTC):%Y%m%d}"
    query(f'DROP TABLE "{partition}"')
    dropped = time.monotonic()
    say(f"row 12: {partition} dropped under load")
    time.sleep(8)
    load.stop()
    with load.lock:
        after = {request_id for at, request_id in load.answered if at > dropped + 0.5}
        cut = sum(1 for _, status in load.results if status is None)
        errors = sum(1 for _, status in load.results if status is not None and status >= 500)
    stack.manage("movebatches")
    deadline = time.monotonic() + 45
    while True:  # the app processes' flushes and the mover: bounded
        logged, repeated = logged_ids(key)
        missing = after - logged
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(1)
    remade = bool(query("SELECT 1 FROM pg_class WHERE relname = %s", (partition,)))
    say(
        f"row 12: partition made again: {remade}; {len(after)} answered after the drop, "
        f"{len(missing)} missing from the log, {repeated} logged twice; {errors} × 5xx"
    )
    passed = remade and not missing and repeated == 0 and cut == 0 and errors == 0 and after
    return Row(
        "12",
        "today's request-log partition dropped under 8 threads of requests",
        f"made again: {'yes' if remade else 'no'}; {len(after)} answered after the drop: "
        f"{len(missing)} missing from the request log, {repeated} logged twice; {errors} × 5xx, "
        f"{cut} cut off",
        "made again; 0 missing, 0 twice, no 5xx",
        "pass" if passed else "FAIL",
    )


NUMBER = 12


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_partition_dropped(setup)]
