"""The Prometheus instruments every part of Gatehouse counts with (docs/operations.md lists them).

prometheus-client's multiprocess mode makes them add up across processes: with
`PROMETHEUS_MULTIPROC_DIR` set, each process (every gunicorn worker, every `manage.py worker`)
writes its values to files of its own in that folder, and `/metrics` reads them all. The
folder is read once, when prometheus_client is first imported, so the instruments are made on
first use (`instruments()`), after gunicorn.conf.py or the worker command has set it; without
it (the development server, the tests) they count in the process alone.

No instrument takes a key's id, name or hint as a label: a label value is a series for ever.
"""

import os
import re
import threading
from pathlib import Path
from typing import Any

# Seconds: an API call takes milliseconds; a dashboard page or a slow database, more.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LAG_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 86400.0)
_PROCESS_FILE = re.compile(r"_(\d+)\.db$")


class Instruments:
    """The instruments, made once per process."""

    def __init__(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.requests = Counter(
            "gatehouse_requests",
            "Requests answered, by door (api, mcp, dashboard), operation and status class.",
            ["door", "operation", "status"],
        )
        self.workspace_requests = Counter(
            "gatehouse_workspace_requests",
            "API and MCP requests by workspace (only with METRICS_WORKSPACE_LABELS on).",
            ["workspace", "door", "status"],
        )
        self.refusals = Counter(
            "gatehouse_refusals", "Requests refused, by door and error code.", ["door", "error"]
        )
        self.duration = Histogram(
            "gatehouse_request_duration_seconds",
            "Time from the request's arrival to its answer, by door and operation.",
            ["door", "operation"],
            buckets=DURATION_BUCKETS,
        )
        self.rate_limited = Counter(
            "gatehouse_rate_limit_hits",
            "Requests refused by a rate limit: a key's (key), a client address's refused "
            "credentials (address), or a key's spent quota (quota).",
            ["bucket"],
        )
        self.key_lookups = Counter(
            "gatehouse_key_lookups",
            "Credentials presented to the API and MCP, by result: active, refused (a key of "
            "ours that may not be used), unknown (no key of ours), missing.",
            ["result"],
        )
        self.tasks = Counter(
            "gatehouse_tasks",
            "Tasks run by the task workers, by task and outcome (done, failed).",
            ["task", "outcome"],
        )
        self.heartbeats = Counter(
            "gatehouse_task_worker_heartbeats", "Heartbeats written by the task workers."
        )
        self.deliveries = Counter(
            "gatehouse_webhook_deliveries",
            "Webhook delivery attempts, by outcome (delivered, failed).",
            ["outcome"],
        )
        self.delivery_lag = Histogram(
            "gatehouse_webhook_delivery_lag_seconds",
            "From an event's delivery being created to its successful attempt.",
            buckets=LAG_BUCKETS,
        )
        self.stream_deliveries = Counter(
            "gatehouse_audit_stream_deliveries",
            "Audit-stream batches sent, by outcome (delivered, failed).",
            ["outcome"],
        )
        self.stream_delivered_events = Counter(
            "gatehouse_audit_stream_delivered_events", "Audit events delivered by the streams."
        )
        self.stream_lag = Histogram(
            "gatehouse_audit_stream_lag_seconds",
            "From an audit event being written to its stream's successful batch, one a batch: "
            "its oldest event's.",
            buckets=LAG_BUCKETS,
        )
        self.processes = Gauge(
            "gatehouse_processes",
            "Processes writing metrics, by kind (web: gunicorn workers; worker: task workers).",
            ["kind"],
            multiprocess_mode="livesum",
        )


_made: list[Instruments] = []
_making = threading.Lock()


def instruments() -> Instruments:
    """This process's instruments, made on first use: once, however many threads ask at once
    (a second set would be refused by the registry, and its request answered 500)."""
    if _made:
        return _made[0]
    with _making:
        if not _made:
            _made.append(Instruments())
    return _made[0]


def status_class(status: int) -> str:
    """`2xx`, `4xx`, …: a status as a label of a handful of values."""
    return f"{status // 100}xx"


# The labelled children of the hot path's instruments, kept: `labels()` costs more than the
# count itself (each a bounded set: doors, operations and route names, status classes).
_request_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}


def request_observed(door: str, operation: str, status: int, error: str, seconds: float) -> None:
    """Count one answered request: its door, operation, status class and duration, and its
    error code when refused."""
    key = (door, operation, status // 100)
    children = _request_children.get(key)
    if children is None:
        found = instruments()
        children = _request_children[key] = (
            found.requests.labels(door, operation, status_class(status)),
            found.duration.labels(door, operation),
        )
    children[0].inc()
    children[1].observe(seconds)
    if status >= 400 and error:
        instruments().refusals.labels(door, error).inc()


def delivery_observed(succeeded: bool, lag_seconds: float) -> None:
    """Count one webhook delivery attempt; a successful one's lag since its delivery was
    created."""
    found = instruments()
    found.deliveries.labels("delivered" if succeeded else "failed").inc()
    if succeeded:
        found.delivery_lag.observe(lag_seconds)


def stream_batch_observed(events: int, oldest_seconds: float | None) -> None:
    """Count one audit-stream batch: delivered (`events` in it, the oldest written
    `oldest_seconds` ago), or failed (`oldest_seconds` None)."""
    found = instruments()
    if oldest_seconds is None:
        found.stream_deliveries.labels("failed").inc()
        return
    found.stream_deliveries.labels("delivered").inc()
    found.stream_delivered_events.inc(events)
    found.stream_lag.observe(oldest_seconds)


_lookup_children: dict[str, Any] = {}


def key_lookup_observed(result: str) -> None:
    """Count one credential presented, by `result` (active, refused, unknown, missing)."""
    child = _lookup_children.get(result)
    if child is None:
        child = _lookup_children[result] = instruments().key_lookups.labels(result)
    child.inc()


def multiprocess_dir() -> str | None:
    """The folder of multiprocess mode, when it is on."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def multiprocess_prepare(folder: str) -> None:
    """Make `folder` the multiprocess folder of this process and its children, and remove the
    files of processes no longer running (a previous run's): their counts would otherwise add
    to this run's. A running task worker's files are kept, and go on counting."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)
    for file in path.glob("*.db"):
        found = _PROCESS_FILE.search(file.name)
        if found and not _running(int(found.group(1))):
            file.unlink(missing_ok=True)


def process_dead(pid: int) -> None:
    """A process of this folder has exited: its live gauges (gatehouse_processes) no longer
    count. Its counters stay: the totals never go back."""
    if multiprocess_dir():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def process_started(kind: str) -> None:
    """Count this process among the live ones of its `kind`."""
    instruments().processes.labels(kind).set(1)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def registry_for_scrape(*collectors: Any) -> Any:
    """A registry holding every process's values (or this process's alone, without
    multiprocess mode) and `collectors`, read at scrape time."""
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    folder = multiprocess_dir()
    if folder is None:
        instruments()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Default(REGISTRY))
    else:
        registry = CollectorRegistry(auto_describe=False)
        MultiProcessCollector(registry, path=folder)  # type: ignore[no-untyped-call]
    for collector in collectors:
        registry.register(collector)
    return registry


class _Default:
    """The default registry's metrics, for a scrape registry of its own."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry

    def collect(self) -> Any:
        return self.registry.collect()
