"""Row 9 of the fault run: a mover SIGKILLed between taking its batches and writing them
(`batch_take` in a `manage.py shell`), then that Redis SIGKILLed and restarted inside the 5 s
lease: seconds until the batches' rows are in PostgreSQL (≤ 15 s), none written twice."""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

import redis

from faults.base import ROOT, USAGE_FLUSH_SLACK, Row, say
from faults.processes import Load, query
from faults.setup import Setup, counted_for, key_id, log_lines, logged_ids
from faults.stack import stop_all


def batch_items(client: redis.Redis, name: str) -> tuple[set[str], int]:
    """A request-log batch's request ids (its entries'), and how many items it holds."""
    ids = set()
    items = client.lrange(name, 0, -1)
    for raw in items:
        kind, _, body = raw.decode().partition("|")
        if kind.startswith("P") or kind == "F":
            ids.add(str(json.loads(body)[0]))
    return ids, len(items)


TAKE_AND_HANG = """
import time
from apps.metering.batches import batch_take
from apps.metering.records import REDIS_COUNTS, REDIS_REQUESTS
from apps.request_log.moving import BATCH_PREFIX as REQUESTS
from apps.usage.moving import BATCH_PREFIX as COUNTS
print("taken", batch_take(REDIS_REQUESTS, REQUESTS), batch_take(REDIS_COUNTS, COUNTS), flush=True)
time.sleep(120)
"""


def row_killed_mover(setup: Setup, bound: float = 15) -> Row:
    """Row 9: a mover (a `manage.py shell` taking the request log's and the counts' batches as
    an app process's move does, with batch_take) SIGKILLed before it writes; the run's Redis
    then SIGKILLed and restarted inside the lease: seconds until the batch's rows are in
    PostgreSQL (taken back by an app process's next flush), and none written twice."""
    stack = setup.stack
    own = setup.redis_of_its_own()
    name = "row9-reader"
    secret = setup.key(name)
    key = key_id(name)
    load = Load(stack.ports, secret, threads=4, pause=0.02)
    time.sleep(3)
    mover = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", TAKE_AND_HANG],
        cwd=ROOT,
        env=stack.env(pgbouncer=False),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    stack.started.append(mover)
    line: list[str] = []
    output = mover.stdout
    assert output is not None  # noqa: S101 - stdout=PIPE

    def read_taken() -> None:
        for text in output:
            if text.startswith("taken "):
                line.append(text.removeprefix("taken "))
                return

    reader = threading.Thread(target=read_taken, daemon=True)
    reader.start()
    reader.join(60)
    taken = (line[0] if line else "").split()
    if len(taken) != 2 or "None" in taken:
        stop_all([mover])
        load.stop()
        return Row("9", "a mover SIGKILLed mid-move", f"no batch taken: {taken}", "≤ 15 s", "FAIL")
    requests_batch, counts_batch = taken
    client = own.client()
    ids, items = batch_items(client, f"gatehouse:requests:batch:{requests_batch}")
    counts_in_batch = sum(
        int(n) for n in client.hgetall(f"gatehouse:usage:batch:{counts_batch}").values()
    )
    os.killpg(mover.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    mover.wait(10)
    say(
        f"row 9: mover SIGKILLed holding request-log batch {requests_batch} ({items} items, "
        f"{len(ids)} entries) and counts batch {counts_batch} ({counts_in_batch} counts)"
    )
    own.kill()
    time.sleep(0.5)
    own.start()
    client = own.client()
    restarted = time.monotonic() - killed_at
    say(f"row 9: Redis SIGKILLed and restarted {restarted:.1f} s after the mover's death")
    kept = bool(client.exists(f"gatehouse:requests:batch:{requests_batch}"))
    deadline = killed_at + 120
    seconds = None
    while time.monotonic() < deadline:
        logged, _ = logged_ids(key)
        marked = query("SELECT count(*) FROM usage_usagemove WHERE batch = %s", (counts_batch,))
        if ids <= logged and marked[0][0] == 1:
            seconds = time.monotonic() - killed_at
            break
        time.sleep(0.2)
    load.stop()
    statuses = load.statuses()
    cut = statuses.pop(None, 0)
    answered = sum(statuses.values())
    stack.manage("movebatches")
    time.sleep(USAGE_FLUSH_SLACK)
    logged, repeated = logged_ids(key)
    missing = set(load.request_ids) - logged
    counted = counted_for(key)
    left = client.exists(
        f"gatehouse:requests:batch:{requests_batch}", f"gatehouse:usage:batch:{counts_batch}"
    ) + sum(
        bool(client.zscore(index, batch))
        for index, batch in (
            ("gatehouse:requests:batches", requests_batch),
            ("gatehouse:usage:batches", counts_batch),
        )
    )
    taken_back = log_lines("server-*", "a stopped mover left")
    figure = (
        (f"{seconds:.1f} s" if seconds is not None else "not within 120 s")
        + f" from the mover's SIGKILL until its batches ({len(ids)} request-log entries, "
        f"{counts_in_batch} counts) were in PostgreSQL; Redis restarted inside the lease, the "
        f"batch {'kept' if kept else 'LOST'}; {answered} answered ({cut} cut off): "
        f"{len(missing)} missing from the log, {repeated} logged twice, {counted} counted; "
        f"{left} batch keys left in Redis; servers logged a take-back {taken_back}×"
    )
    say(f"row 9: {figure}")
    passed = (
        seconds is not None
        and seconds <= bound
        and kept
        and ids
        and not missing
        and repeated == 0
        and answered <= counted <= answered + cut
        and left == 0
    )
    return Row(
        "9",
        "a mover SIGKILLed between taking its batches and writing them (manage.py shell with "
        "batch_take), then the Redis SIGKILLed and restarted inside the 5 s lease, under "
        "4 threads of requests",
        figure,
        f"≤ {bound:g} s; 0 missing, 0 twice, 0 left",
        "pass" if passed else "FAIL",
    )


NUMBER = 9


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_killed_mover(setup)]
