"""What every part of the fault run shares: where it runs, its names and numbers, its Row."""

import contextlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BIN = Path(sys.executable).parent

# FAULT_RUN_SCRATCH: the logs' folder of a run that must not meet another engineer's.
SCRATCH = Path(os.environ.get("FAULT_RUN_SCRATCH", "/tmp/faults"))  # noqa: S108 - rewritten

# FAULT_RUN_DATABASE: another name, for an engineer whose database must be their own. A run
# drops it only when an earlier run made it (its comment says so), never a database of yours.
DATABASE = os.environ.get("FAULT_RUN_DATABASE", "gatehouse_faults")
DATABASE_MARK = "made by scripts/fault_run.py; dropped by its next run"

POSTGRES_PORT = 5432


class Ports:
    """The ports of the run's own PgBouncer and Redis, chosen at its start (--ports, or free
    ones): never the machine's, which the run would otherwise stop, empty or reconfigure."""

    pgbouncer = 0
    redis = 0


SERVERS = 3

WORKERS_PER_SERVER = 2

WORKSPACE_PATH = "/api/v1/workspace"

OWNER = "owner@faults.test"

ALL_SCOPES = (
    "products:read,products:write,communities:read,communities:write,"
    "pages:read,pages:write,keys:read,keys:write"
)

NAT_ADDRESS = "203.0.113.7"  # the office's public address, as the proxy header says

AUTH_FAILURES_PER_MINUTE = 100  # the app's default API_AUTH_FAILURES_PER_MINUTE

STARTED = time.monotonic()


def say(message: str) -> None:
    with contextlib.suppress(OSError):  # a closed pipe must not stop the cleanup
        print(f"[{time.monotonic() - STARTED:6.1f}s] {message}", flush=True)


@dataclass
class Row:
    row: str
    fault: str
    figure: str
    required: str
    result: str


USAGE_FLUSH_SLACK = 6  # one app flush (USAGE_FLUSH_SECONDS = 5) after the load stops
