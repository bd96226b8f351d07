"""gunicorn reads this file from the working directory.

If the access log is turned on (--access-logfile), it logs the path without the query string
(%(U)s rather than the request line %(r)s): a key someone put in a URL must not land in a log;
and it ends with the answer's Request-Id, so support can join a user's report to the line.
Both of gunicorn's logs pass through the redaction filter the Django logs use (a key pasted
into a path is written `gwk_[removed]`), and the Referer is logged without its query.
"""

import json
import os
import shutil
import sys
import tempfile

from gunicorn import util
from gunicorn.glogging import Logger

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # before gunicorn's own chdir
from apps.common.logging import JsonLines, RedactSecrets, referer_without_query  # noqa: E402
from apps.common.metrics import multiprocess_prepare, process_dead, process_started  # noqa: E402

# Metrics add up across the workers (prometheus-client's multiprocess mode, docs/operations.md):
# each worker writes its values to files in PROMETHEUS_MULTIPROC_DIR, and /metrics reads them
# all. Set before the application is loaded (preload_app below). Without it a folder of this
# master's own is made, and removed at exit; a task worker's metrics join only a folder named
# in the environment of both.
_OWN_METRICS_DIR = (
    None
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    else tempfile.mkdtemp(prefix="gatehouse-metrics-")
)
multiprocess_prepare(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or str(_OWN_METRICS_DIR))
JSON_LOGS = os.environ.get("LOG_FORMAT", "").strip().lower() == "json"

access_log_format = (
    '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(f)s" "%(a)s" %({request-id}o)s'
)


class RedactingLogger(Logger):
    """gunicorn's logger, with every handler of its error and access logs filtered by
    RedactSecrets, and the Referer atoms without their query (`/device?user_code=…`)."""

    def setup(self, cfg) -> None:  # type: ignore[no-untyped-def]
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                if not any(isinstance(f, RedactSecrets) for f in handler.filters):
                    handler.addFilter(RedactSecrets())
                if JSON_LOGS:  # LOG_FORMAT=json: one JSON object a line, as Django's
                    handler.setFormatter(JsonLines())

    def access(self, resp, req, environ, request_time):  # type: ignore[no-untyped-def]
        if not JSON_LOGS or not self.access_log_enabled:
            return super().access(resp, req, environ, request_time)
        atoms = self.atoms(resp, req, environ, request_time)
        http = {
            "remote": atoms["h"],
            "method": atoms["m"],
            "path": atoms["U"],
            "status": atoms["s"],
            "bytes": atoms["B"],
            "seconds": round(request_time.total_seconds(), 6),
            "referer": atoms["f"],
            "user_agent": atoms["a"],
            "request_id": atoms.get("{request-id}o", "-"),
        }
        self.access_log.info("%s %s %s", atoms["m"], atoms["U"], atoms["s"], extra={"http": http})

    def atoms(self, resp, req, environ, request_time):  # type: ignore[no-untyped-def]
        atoms = super().atoms(resp, req, environ, request_time)
        for name in ("f", "{referer}i", "{http_referer}e"):
            if atoms.get(name, "-") != "-":
                atoms[name] = referer_without_query(atoms[name])
        return atoms


logger_class = RedactingLogger

# The longest request line gunicorn allows (its default is 4094): a GET /api/v1/keys with every
# filter at its longest stays far below it, and a longer one is refused before Django.
limit_request_line = 8190

# What gunicorn answers itself, before Django sees the request (a request line over the limit,
# headers too large, a malformed request), in the API's JSON rather than gunicorn's HTML page:
# every answer of this server, errors included, is JSON. gunicorn has no setting for that page,
# so its one writer is replaced.
GUNICORN_REFUSALS = {
    403: "forbidden-request",
    414: "uri-too-long",
    417: "expectation-failed",
    431: "headers-too-large",
    500: "internal-error",
    501: "not-implemented",
}


def write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    from apps.api.errors import DEFAULT_MESSAGES  # in the worker, where the app is loaded
    from apps.metering.facts import new_request_id

    error = GUNICORN_REFUSALS.get(status_int, "bad-request")
    body = json.dumps({"error": error, "message": DEFAULT_MESSAGES[error]}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"Request-Id: {new_request_id()}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin1") + body)


util.write_error = write_json_error


# Each master its own control socket (gunicornc's), named after the addresses it listens on:
# gunicorn's default, ~/.gunicorn/gunicorn.ctl (or $XDG_RUNTIME_DIR/gunicorn.ctl), is one path
# for every master a user runs, and the first one stopped removed it for the others. A path
# given on the command line (--control-socket) or --no-control-socket wins.
def _control_socket(server) -> None:
    import os
    import re

    from gunicorn.config import _get_default_control_socket

    cfg = server.cfg
    if cfg.control_socket_disable or cfg.control_socket != _get_default_control_socket():
        return
    where = "_".join(re.sub(r"[^A-Za-z0-9.]+", "-", address) for address in cfg.bind)
    folder = os.path.dirname(_get_default_control_socket())
    cfg.set("control_socket", os.path.join(folder, f"gatehouse-{where}.ctl"))


# New workers are ready before the old ones stop. On SIGHUP gunicorn forks the new workers and
# at once stops the old ones (arbiter.reload, then manage_workers); without preloading, each new
# worker then spent seconds importing Django while nobody accepted (5.8 s under load, past a
# 15 s client timeout once). Preloaded, the master imports the app and its URLconf once, and a
# forked worker answers at once. The cost: SIGHUP no longer loads new code; a release is a
# restart of the master, or gunicorn's upgrade on the fly (USR2, then QUIT to the old master),
# as deploy/systemd/gatehouse-web.service says.
preload_app = True


def on_starting(server) -> None:
    _control_socket(server)


def child_exit(server, worker) -> None:
    # A worker gone (a restart, max_requests, a timeout): its live gauge (gatehouse_processes)
    # stops counting; its counters' files stay, so the totals never go back.
    process_dead(worker.pid)


def on_exit(server) -> None:
    if _OWN_METRICS_DIR is not None:
        shutil.rmtree(_OWN_METRICS_DIR, ignore_errors=True)


def when_ready(server) -> None:
    # Before the first fork: the URLconf and every view imported in the master (a worker's first
    # request would import them otherwise), and no connection left open for the children to share.
    from django.db import connections
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every view
    connections.close_all()


# An app process with no request for IDLE_CLOSE_SECONDS gives its database connection back.
# Django closes a connection past CONN_MAX_AGE only when a request starts or ends, so after the
# load an idle worker held its connection until the next request (75-80 s were measured). A
# sync worker's main loop wakes at least every --timeout / 2 seconds (15) between requests, in
# the thread whose connection it is: there the connection is closed, at most ~25 s after the
# last request. (A gthread worker's connections are its threads': this does not reach them.)
IDLE_CLOSE_SECONDS = 10


def post_request(worker, req, environ, resp) -> None:
    import time

    worker.gatehouse_last_request = time.monotonic()


def post_worker_init(worker) -> None:
    import time

    process_started("web")
    notify = worker.notify

    def notify_and_give_back() -> None:
        notify()
        last = getattr(worker, "gatehouse_last_request", None)
        if last is not None and time.monotonic() - last > IDLE_CLOSE_SECONDS:
            from django.db import connections

            connections.close_all()
            worker.gatehouse_last_request = None

    worker.notify = notify_and_give_back
