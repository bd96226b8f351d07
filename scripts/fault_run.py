"""A scripted fault run against a production-like Gatehouse on this machine, which prints a
figure for each fault and ends with a Markdown table.

    .venv/bin/python scripts/fault_run.py [--only 1,3] [--requests 3000] [--ports P1,P2,P3,P4[,P5]]

It sets up everything itself: PgBouncer (scripts/start_pgbouncer.sh, unless one answers on
127.0.0.1:6439 already), a fresh PostgreSQL database `gatehouse_faults` ($FAULT_RUN_DATABASE
when set; dropped, created, migrated), Redis database 13 ($FAULT_RUN_REDIS_URL when set;
emptied), its logs in /tmp/faults ($FAULT_RUN_SCRATCH), a workspace, keys and a
webhook endpoint made with the operator commands, a loopback webhook receiver (a threaded
http.server in this process), three gunicorn servers (2 sync workers each, DEBUG off) through
PgBouncer in transaction pooling, and two `manage.py worker` processes. Then the rows:

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
   worker of the allowance).

Rows 8, 9 and 10 never touch the machine's shared Redis: they start a redis-server of their own
(the fifth of --ports, or a free port, its files in /tmp/faults/redis-PORT/), point the app
servers and task workers at it, and stop it at the end.

It serves only on the ports it is told to (--ports: the three app servers', the webhook
receiver's and optionally rows 8 and 9's Redis), or on free ones it picks and prints.

Every process it starts is stopped at the end (their process groups), and every wait is
bounded; the whole run takes about five minutes, and exits 1 when a row fails. Logs are in
/tmp/faults/. The database is left for inspection and dropped at the next run.
"""

import argparse
import collections
import contextlib
import http.client
import itertools
import json
import math
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg
import redis
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# FAULT_RUN_SCRATCH and FAULT_RUN_REDIS_URL: the logs' folder and the shared Redis database
# (emptied) of a run that must not meet another engineer's.
SCRATCH = Path(os.environ.get("FAULT_RUN_SCRATCH", "/tmp/faults"))  # noqa: S108 - rewritten
# FAULT_RUN_DATABASE: another name, for an engineer whose database must be their own.
DATABASE = os.environ.get("FAULT_RUN_DATABASE", "gatehouse_faults")
POSTGRES_PORT = 5432
PGBOUNCER_PORT = 6439
REDIS_URL = os.environ.get("FAULT_RUN_REDIS_URL", "redis://127.0.0.1:6379/13")
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


# --- processes, sockets and the database -------------------------------------------------------


def query(statement: str, params: tuple = (), database: str = DATABASE) -> list[tuple]:
    """One statement on a fresh direct connection (a backend terminated by row 1 is no
    matter); its rows."""
    with psycopg.connect(
        host="127.0.0.1",
        port=POSTGRES_PORT,
        user="postgres",
        dbname=database,
        autocommit=True,
        connect_timeout=5,
    ) as conn:
        cursor = conn.execute(statement, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def db_now() -> datetime:
    return query("SELECT now()")[0][0]


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a gunicorn master's workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return sorted(found)


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(int(link[8:-1]))
    return inodes


def tcp_table() -> dict[int, tuple[int, int, str]]:
    """Every TCP socket of this network namespace: inode → (local port, remote port, state);
    state "01" is ESTABLISHED."""
    table = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(name) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local, remote = fields[1].rsplit(":", 1)[1], fields[2].rsplit(":", 1)[1]
                table[int(fields[9])] = (int(local, 16), int(remote, 16), fields[3])
    return table


def call(
    port: int,
    path: str,
    key: str | None = None,
    *,
    method: str = "GET",
    body: object = None,
    headers: dict[str, str] | None = None,
    timeout: float = 15.0,
    answer_headers: dict[str, str] | None = None,
) -> tuple[int | None, bytes]:
    """One HTTP request to an app server: (status, body), or (None, b"") when cut off; the
    answer's headers go into `answer_headers` when given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent = dict(headers or {})
    if key:
        sent["Authorization"] = f"Bearer {key}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        if answer_headers is not None:
            answer_headers.update(response.getheaders())
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return None, b""
    finally:
        conn.close()


class Load:
    """GETs of the workspace with one key from `threads` threads, spread over the servers in
    turn, each thread pausing `pause` s between its requests, in the background until `total`
    were sent or stop(); results are (time, status)."""

    def __init__(
        self,
        ports: list[int],
        key: str,
        *,
        total: int | None = None,
        threads: int = 8,
        headers: dict[str, str] | None = None,
        pause: float = 0.0,
    ) -> None:
        self.ports, self.key, self.total, self.headers = ports, key, total, headers
        self.pause = pause
        self.results: list[tuple[float, int | None]] = []
        self.latencies: list[tuple[float, float]] = []  # (when sent, seconds to the answer)
        self.request_ids: list[str] = []  # the Request-Id of every answer that came back
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.numbers = itertools.count()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        for thread in self.threads:
            thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            number = next(self.numbers)
            if self.total is not None and number >= self.total:
                return
            port = self.ports[number % len(self.ports)]
            sent = time.monotonic()
            answer: dict[str, str] = {}
            status, _ = call(
                port, WORKSPACE_PATH, self.key, headers=self.headers, answer_headers=answer
            )
            with self.lock:
                self.results.append((time.monotonic(), status))
                if status is not None and answer.get("Request-Id"):
                    self.request_ids.append(answer["Request-Id"])
                self.latencies.append((sent, time.monotonic() - sent))
            if self.pause:
                self.stopping.wait(self.pause)

    def done(self) -> int:
        return len(self.results)

    def wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        self.stopping.set()

    def stop(self) -> None:
        self.stopping.set()
        self.wait(20)

    def statuses(self) -> collections.Counter:
        with self.lock:
            return collections.Counter(status for _, status in self.results)


# --- the webhook receiver ------------------------------------------------------------------


class Receiver:
    """A loopback webhook endpoint recording each delivery by its webhook-id. It can wait
    `delay` seconds before each answer, and hold the next request whose body holds a marker
    without answering it (`hold_next`): a held request is not counted as received."""

    def __init__(self, port: int = 0) -> None:
        self.lock = threading.Lock()
        self.received: dict[str, tuple[float, dict]] = {}
        self.delay = 0.0
        self.hold: bytes | None = None
        self.held_id: str | None = None
        self.held = threading.Event()
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                message_id = self.headers.get("webhook-id", "")
                with receiver.lock:
                    hold = receiver.hold is not None and receiver.hold in body
                    if hold:
                        receiver.hold = None
                if hold:
                    receiver.held_id = message_id
                    receiver.held.set()
                    receiver.release.wait(30)
                    self.close_connection = True
                    return  # no answer: its sender has been killed meanwhile
                if receiver.delay:
                    time.sleep(receiver.delay)
                try:
                    payload = json.loads(body)
                except ValueError:
                    payload = {}
                with receiver.lock:
                    receiver.received.setdefault(message_id, (time.monotonic(), payload))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hold_next(self, marker: str) -> None:
        self.held.clear()
        self.release.clear()
        self.held_id = None
        with self.lock:
            self.hold = marker.encode()

    def key_names(self, prefix: str) -> set[str]:
        """The names of the keys whose key.created events arrived, among those with `prefix`."""
        with self.lock:
            payloads = [payload for _, payload in self.received.values()]
        names = set()
        for payload in payloads:
            name = ((payload.get("data") or {}).get("key") or {}).get("name") or ""
            if payload.get("type") == "key.created" and name.startswith(prefix):
                names.add(name)
        return names

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


# --- the deployment: app servers and task workers -------------------------------------------


class Stack:
    """Three gunicorn servers and the task workers, (re)started in a mode: with or without
    REDIS_URL, through PgBouncer or straight to PostgreSQL."""

    def __init__(self, receiver: Receiver, ports: list[int]) -> None:
        self.receiver = receiver
        self.ports = ports
        self.secret_key = secrets.token_urlsafe(50)
        self.hash_secret = secrets.token_urlsafe(48)
        self.servers: list[subprocess.Popen] = []
        self.workers: dict[str, subprocess.Popen] = {}
        self.started: list[subprocess.Popen] = []  # everything, for the final cleanup
        self.mode: tuple[bool, bool] | None = None  # (redis, through PgBouncer)
        self.worker_mode: tuple[bool, bool] = (True, True)
        self.worker_numbers = itertools.count(1)
        self.redis_url = REDIS_URL  # rows 8 and 9 point everything at a Redis of their own
        self.served_url = REDIS_URL

    def env(self, *, redis_on: bool = True, pgbouncer: bool = True) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
        }
        port = PGBOUNCER_PORT if pgbouncer else POSTGRES_PORT
        env.update(
            DEBUG="false",
            SECRET_KEY=self.secret_key,
            API_KEY_HASH_SECRET=self.hash_secret,
            DATABASE_URL=f"postgres://postgres@127.0.0.1:{port}/{DATABASE}",
            ALLOWED_HOSTS="127.0.0.1,localhost",
            SITE_URL=f"http://127.0.0.1:{self.ports[0]}",
            # Plain HTTP on loopback: no TLS here, so no redirect and no https-required.
            SECURE_SSL_REDIRECT="false",
            # The receiver is on loopback, which production refuses (apps/webhooks/destinations.py).
            WEBHOOKS_ALLOW_PRIVATE="true",
            # No key of this run is to be refused for its own rate (row 3 sends thousands).
            API_RATE_LIMIT_PER_MINUTE="100000",
            # Row 5's NAT: one proxy's X-Forwarded-For entry names the client.
            TRUSTED_PROXY_COUNT="1",
            LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",
        )
        if pgbouncer:
            env["DATABASE_PREPARED_LOOKUP"] = "false"  # Debian's PgBouncer 1.18
            env["DATABASE_SERVER_SIDE_CURSORS"] = "false"  # no PgBouncer keeps them
        if redis_on:
            env["REDIS_URL"] = self.redis_url
        return env

    def manage(self, *args: str) -> str:
        """A management command on a direct connection; the last line it printed."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env(pgbouncer=False),
            capture_output=True,
            text=True,
            timeout=180,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stdout}{done.stderr}")
        lines = done.stdout.strip().splitlines()
        return lines[-1] if lines else ""

    def _spawn(self, args: list[str], env: dict[str, str], log_name: str) -> subprocess.Popen:
        with open(SCRATCH / log_name, "a") as log:  # the child keeps its own descriptor
            log.write(f"--- {datetime.now().isoformat()} {' '.join(args[:3])}\n")
            log.flush()
            process = subprocess.Popen(
                args,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started.append(process)
        return process

    def serve(self, *, redis_on: bool = True, pgbouncer: bool = True) -> None:
        """The three servers in this mode (restarted if they run in another one); running
        task workers follow the mode."""
        mode = (redis_on, pgbouncer)
        if (
            self.mode == mode
            and self.served_url == self.redis_url
            and all(p.poll() is None for p in self.servers)
        ):
            return
        stop_all(self.servers)
        env = self.env(redis_on=redis_on, pgbouncer=pgbouncer)
        self.servers = [
            self._spawn(
                [str(BIN / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}"]
                + f"--workers {WORKERS_PER_SERVER} --log-level warning".split(),
                env,
                f"server-{port}.log",
            )
            for port in self.ports
        ]
        deadline = time.monotonic() + 60
        for port in self.ports:
            while call(port, "/healthz", timeout=5)[0] != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"The server on port {port} did not start: see {SCRATCH}.")
                time.sleep(0.3)
        self.mode = mode
        moved = self.served_url != self.redis_url
        self.served_url = self.redis_url
        say(
            f"3 app servers up ({self.redis_url if redis_on else 'no Redis'}, "
            f"{'through PgBouncer' if pgbouncer else 'direct to PostgreSQL'}), ports {self.ports}"
        )
        if self.workers and (self.worker_mode != mode or moved):
            count = len(self.alive_workers())
            self.stop_workers()
            self.worker_mode = mode
            self.ensure_workers(count)
        self.worker_mode = mode

    def server_workers(self, index: int) -> list[int]:
        return children(self.servers[index].pid)

    def app_processes(self) -> list[int]:
        return [pid for index in range(SERVERS) for pid in self.server_workers(index)]

    def alive_workers(self) -> dict[str, subprocess.Popen]:
        return {name: p for name, p in self.workers.items() if p.poll() is None}

    def ensure_workers(self, count: int = 2) -> None:
        redis_on, pgbouncer = self.worker_mode
        env = self.env(redis_on=redis_on, pgbouncer=pgbouncer)
        started = False
        while len(self.alive_workers()) < count:
            name = f"fault-w{next(self.worker_numbers)}"
            self.workers[name] = self._spawn(
                [sys.executable, *f"manage.py worker -- --interval 0.2 --worker-id {name}".split()],
                env,
                f"{name}.log",
            )
            started = True
        if started:
            say(f"task workers running: {', '.join(sorted(self.alive_workers()))}")

    def stop_workers(self) -> None:
        stop_all(list(self.workers.values()))
        self.workers = {}

    def stop(self) -> None:
        stop_all(self.started)


class OwnRedis:
    """A redis-server of this run's own on loopback, with the persistence production sets
    (deploy/redis.conf: append-only file, fsync always), which rows 8 and 9 SIGKILL and
    restart from its file."""

    def __init__(self, stack: Stack, port: int) -> None:
        self.stack, self.port = stack, port
        self.dir = SCRATCH / f"redis-{port}"
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.glob("**/*"):
            if old.is_file():
                old.unlink()
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        args = f"--port {self.port} --bind 127.0.0.1 --appendonly yes --appendfsync always"
        self.process = self.stack._spawn(
            ["redis-server", *args.split(), "--save", "", "--dir", str(self.dir)],
            os.environ.copy(),
            f"redis-{self.port}.log",
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(redis.RedisError):
                if client.ping():
                    break
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"redis-server on {self.port} did not start: see {SCRATCH}.")
            time.sleep(0.1)
        say(f"Redis of the run's own on 127.0.0.1:{self.port} (append-only, fsync always)")

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown, no save."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)


def stop_all(processes: list[subprocess.Popen]) -> None:
    """SIGTERM the process group of each process still running, wait, then SIGKILL what is
    left of those groups."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for process in running:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)


# --- set-up --------------------------------------------------------------------------------


@dataclass
class Setup:
    stack: Stack
    receiver: Receiver
    workspace: str
    admin_key: str
    pgbouncer_pid: int | None  # ours to stop, when this run started it
    redis_port: int = 0  # rows 8 and 9's own Redis (0: a free port)
    own_redis: "OwnRedis | None" = None

    def redis_of_its_own(self) -> "OwnRedis":
        """Rows 8 and 9's Redis (started on first use), with the servers and task workers
        pointed at it: never the machine's shared one, which they kill."""
        if self.own_redis is None:
            self.own_redis = OwnRedis(self.stack, self.redis_port or free_port())
        self.stack.redis_url = self.own_redis.url
        self.stack.serve()
        self.stack.ensure_workers(2)
        return self.own_redis

    def key(self, name: str, scopes: str = "products:read") -> str:
        """A new key made with createapikey; its secret."""
        return self.stack.manage(
            "createapikey",
            "--workspace",
            self.workspace,
            "--user",
            OWNER,
            "--name",
            name,
            "--scopes",
            scopes,
        )


def key_id(name: str) -> int:
    return query("SELECT id FROM api_keys_apikey WHERE name = %s", (name,))[0][0]


def start_pgbouncer() -> int | None:
    """PgBouncer on 6439: the one already answering, or one started by the project's script
    (then its pid, to stop at the end)."""
    deadline = time.monotonic() + 300
    while not Path("/usr/sbin/pgbouncer").exists():
        if time.monotonic() > deadline:
            raise RuntimeError("/usr/sbin/pgbouncer never appeared (is apt still installing?).")
        say("waiting for /usr/sbin/pgbouncer (apt) …")
        time.sleep(10)
    if port_open(PGBOUNCER_PORT):
        say("PgBouncer already answers on 127.0.0.1:6439: using it")
        return None
    subprocess.run(["bash", "scripts/start_pgbouncer.sh"], cwd=ROOT, check=True, timeout=60)
    pid = int((ROOT / "var/pgbouncer/pgbouncer.pid").read_text())
    say(f"PgBouncer started by scripts/start_pgbouncer.sh (pid {pid})")
    return pid


def leftovers() -> list[int]:
    """Processes of an earlier run still serving this database (a run killed with SIGKILL):
    through PgBouncer they would reach the new one and take its tasks."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
                if any(
                    item.startswith(b"DATABASE_URL=") and item.endswith(f"/{DATABASE}".encode())
                    for item in environ
                ):
                    found.append(int(entry))
    return found


def set_up(ports: list[int] | None) -> Setup:
    if stale := leftovers():
        raise RuntimeError(
            f"Processes of an earlier fault run still use {DATABASE}: {stale}. Stop them first "
            f"(kill -- -PGID for each, see ps -o pid,pgid,args -p {','.join(map(str, stale))})."
        )
    SCRATCH.mkdir(parents=True, exist_ok=True)
    for old in SCRATCH.glob("*.log"):
        old.unlink()
    pgbouncer_pid = start_pgbouncer()
    redis.Redis.from_url(REDIS_URL).flushdb()
    with psycopg.connect(
        host="127.0.0.1", port=POSTGRES_PORT, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    receiver = Receiver(ports[SERVERS] if ports else 0)
    stack = Stack(receiver, ports[:SERVERS] if ports else [free_port() for _ in range(SERVERS)])
    stack.manage("migrate", "--noinput")
    # A release collects its static files: /healthz is 503 until it has (docs/operations.md).
    stack.manage("collectstatic", "--noinput")
    say(f"database {DATABASE} created and migrated, static files collected; {REDIS_URL} emptied")
    workspace = stack.manage("createworkspace", "Fault Run", "--owner", OWNER)
    setup = Setup(stack, receiver, workspace, "", pgbouncer_pid)
    setup.admin_key = setup.key("fault-admin", ALL_SCOPES)
    stack.manage("webhooks", "add", "--workspace", workspace, "--url", receiver.url)
    say(f"workspace {workspace}, an admin key and a webhook endpoint to {receiver.url}")
    return setup


def create_keys(setup: Setup, names: list[str], threads: int = 6) -> int:
    """Keys created over the API (POST /api/v1/keys), each queueing a key.created event;
    how many were created."""
    ports = setup.stack.ports
    created = []
    todo = iter(enumerate(names))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                item = next(todo, None)
            if item is None:
                return
            number, name = item
            status, _ = call(
                ports[number % len(ports)],
                "/api/v1/keys",
                setup.admin_key,
                method="POST",
                body={"name": name, "scopes": ["products:read"]},
            )
            if status == 201:
                created.append(name)

    pool = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(120)
    return len(created)


def webhook_tasks(since: datetime) -> collections.Counter:
    rows = query(
        "SELECT status, count(*) FROM django_tasks_database_dbtaskresult "
        "WHERE task_path LIKE 'apps.webhooks.%%' AND enqueued_at >= %s GROUP BY status",
        (since,),
    )
    return collections.Counter(dict(rows))


def log_lines(name: str, text: str) -> int:
    """How often `text` is in /tmp/faults/NAME.log; NAME may be a glob (server-*)."""
    found = 0
    for path in SCRATCH.glob(f"{name}.log"):
        with contextlib.suppress(OSError):
            found += path.read_text(errors="replace").count(text)
    return found


REDIS_AWAY = "Redis is unreachable"  # apps/common/cache.py's warning: per-process fallback
# apps/metering/settling.py's warning: requests whose limiter call failed, settled once.
SETTLED = re.compile(r"Settled (\d+) requests whose limiter call failed: (\d+) had run in Redis")


def settled_in_logs() -> tuple[int, int]:
    """How many requests the app servers settled after a failed limiter call, and how many of
    those Redis had run before the reply was lost."""
    settled = ran = 0
    for path in SCRATCH.glob("server-*.log"):
        with contextlib.suppress(OSError):
            for match in SETTLED.finditer(path.read_text(errors="replace")):
                settled, ran = settled + int(match[1]), ran + int(match[2])
    return settled, ran


# --- the rows ------------------------------------------------------------------------------


@dataclass
class Row:
    row: str
    fault: str
    figure: str
    required: str
    result: str


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


def usage_settled(key: int, answered: int, sent: int, load_end: datetime, limit: float = 90) -> int:
    """The key's counts in PostgreSQL once they settle: every request sent counted; or,
    unchanged for 10 s, every answered one, or what a schedule tick that began 6 s after the
    load left (every minutely job has run since); or what there is after `limit` seconds."""
    deadline = time.monotonic() + limit
    history: list[tuple[float, int]] = []
    counted = 0
    while time.monotonic() < deadline:
        counted = int(
            query(
                "SELECT coalesce(sum(count), 0) FROM usage_keyusagehour WHERE key_id = %s", (key,)
            )[0][0]
        )
        now = time.monotonic()
        history.append((now, counted))
        steady = now - history[0][0] >= 10 and {c for t, c in history if t >= now - 10} == {counted}
        tick = query("SELECT last_run_at, now() FROM jobs_scheduledjob WHERE name = '_tick'")
        tick_at, db_time = tick[0] if tick else (None, None)
        tick_passed = (
            tick_at is not None
            and tick_at > load_end + timedelta(seconds=6)
            and db_time - tick_at > timedelta(seconds=5)
        )
        if counted >= sent or (steady and (counted >= answered or tick_passed)):
            break
        time.sleep(2)
    return counted


def row_killed_app_worker(setup: Setup, total: int, redis_on: bool) -> Row:
    """Row 3: one gunicorn worker SIGKILLed in the middle of `total` requests of one key;
    the requests answered against the key's counts in PostgreSQL."""
    stack = setup.stack
    stack.serve(redis_on=redis_on)
    stack.ensure_workers(2)
    mode = "with Redis" if redis_on else "without Redis"
    redis_away = log_lines("server-*", REDIS_AWAY)
    name = f"row3-{'redis' if redis_on else 'local'}"
    secret = setup.key(name)
    key = key_id(name)
    load = Load(stack.ports, secret, total=total, threads=8)
    deadline = time.monotonic() + 120
    while load.done() < total // 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    victim = stack.server_workers(1)[0]
    os.kill(victim, signal.SIGKILL)
    say(f"row 3 ({mode}): gunicorn worker {victim} SIGKILLed after {load.done()} answers")
    load.wait(180)
    load_end = db_now()
    statuses = load.statuses()
    cut = statuses.pop(None, 0)
    answered = sum(statuses.values())
    say(f"row 3 ({mode}): answers {dict(statuses)}, {cut} cut off; waiting for the counts")
    counted = usage_settled(key, answered, answered + cut, load_end)
    lost = max(0, answered - counted)
    extra = max(0, counted - answered - cut)
    redis_away = log_lines("server-*", REDIS_AWAY) - redis_away
    say(
        f"row 3 ({mode}): {counted} counted in usage_keyusagehour; servers logged "
        f"'{REDIS_AWAY}' {redis_away}×"
    )
    figure = (
        f"{lost} counts lost ({answered} answered"
        + (f", {cut} cut off" if cut else "")
        + f"; {counted} counted in PostgreSQL"
        + (f"; {extra} more than sent" if extra else "")
        + ")"
        + (f"; servers logged '{REDIS_AWAY}' {redis_away}× meanwhile" if redis_away else "")
    )
    if redis_on:
        required, result = "0", "pass" if lost == 0 and extra == 0 else "FAIL"
    else:
        # docs/operations.md: without Redis a SIGKILL loses that process's last ≤ 5 s.
        required = "documented: up to 5 s of one process's counts"
        result = "as documented" if extra == 0 else "FAIL"
    return Row(
        "3",
        f"gunicorn worker SIGKILLed under {total} requests of one key, {mode}",
        figure,
        required,
        result,
    )


def connections_under_load(
    setup: Setup, pgbouncer: bool, seconds: float = 8
) -> dict[int, list[int]]:
    """How many database connections each app worker process holds, sampled every 0.2 s
    during `seconds` of load and 6 s after it (so a usage flush is included): pid → counts.
    Direct, they are pg_stat_activity's client ports mapped to the processes owning them;
    through PgBouncer, the processes' established sockets to it (its admin console's SHOW
    CLIENTS is closed: start_pgbouncer.sh sets no admin_users)."""
    stack = setup.stack
    stack.serve(pgbouncer=pgbouncer)
    secret = setup.key(f"row4-{'pgbouncer' if pgbouncer else 'direct'}")
    samples: dict[int, list[int]] = collections.defaultdict(list)
    load = Load(stack.ports, secret, threads=8)
    ends = time.monotonic() + seconds
    while time.monotonic() < ends + 6:
        if time.monotonic() > ends:
            load.stopping.set()
        apps = stack.app_processes()
        owners = {inode: pid for pid in apps for inode in socket_inodes(pid)}
        if pgbouncer:
            target, ports = PGBOUNCER_PORT, None
        else:
            target = POSTGRES_PORT
            ports = {
                port
                for (port,) in query(
                    "SELECT client_port FROM pg_stat_activity "
                    "WHERE datname = %s AND client_port IS NOT NULL",
                    (DATABASE,),
                    database="postgres",
                )
            }
        held: collections.Counter = collections.Counter()
        for inode, (local, remote, state) in tcp_table().items():
            if inode in owners and remote == target and state == "01":
                if ports is None or local in ports:
                    held[owners[inode]] += 1
        for pid in apps:
            samples[pid].append(held.get(pid, 0))
        time.sleep(0.2)
    load.stop()
    return dict(samples)


@dataclass
class Held:
    processes: int
    usual: int  # the most any process held in most of its samples
    most: int  # the most any process held at one instant
    over_one: int  # samples of a process holding more than one
    samples: int

    @classmethod
    def of(cls, samples: dict[int, list[int]]) -> "Held":
        counts = [c for per_pid in samples.values() for c in per_pid]
        usual = max(
            (collections.Counter(per_pid).most_common(1)[0][0] for per_pid in samples.values()),
            default=0,
        )
        return cls(
            len(samples), usual, max(counts, default=0), sum(c > 1 for c in counts), len(counts)
        )

    def text(self, what: str) -> str:
        extra = (
            f"; {self.most} at one instant in {self.over_one} of {self.samples} samples"
            if self.most > 1
            else f"; never more in {self.samples} samples"
        )
        return f"{self.usual} {what} per app process held ({self.processes} processes{extra})"


def row_connections(setup: Setup) -> Row:
    """Row 4: database connections per app worker process, directly and through PgBouncer."""
    direct = Held.of(connections_under_load(setup, pgbouncer=False))
    say(f"row 4: direct: {direct}")
    pooled = Held.of(connections_under_load(setup, pgbouncer=True))
    servers = query(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (DATABASE,), database="postgres"
    )[0][0]
    say(f"row 4: through PgBouncer: {pooled}; {servers} server connections")
    # A second connection for a moment is the usage flush's own (docs/operations.md): it
    # opens one for each write and closes it. Held means seen in most samples.
    passed = direct.usual == pooled.usual == 1 and all(
        held.over_one <= held.samples // 20 for held in (direct, pooled)
    )
    return Row(
        "4",
        f"{SERVERS} app servers × {WORKERS_PER_SERVER} workers under load, sampled every 0.2 s",
        f"direct: {direct.text('PostgreSQL connection')}; through PgBouncer: "
        f"{pooled.text('client connection')}, {servers} server connections",
        "1 (a second only for a usage flush's moment)",
        "pass" if passed else "FAIL",
    )


def row_nat(setup: Setup, seconds: float = 10) -> Row:
    """Row 5: a revoked key sent fast from a NAT's address while a valid key is used from
    the same address."""
    stack = setup.stack
    stack.serve()
    valid = setup.key("row5-valid")
    revoked = setup.key("row5-revoked")
    stack.manage("revokeapikey", revoked)
    behind_nat = {"X-Forwarded-For": NAT_ADDRESS}
    redis_away = log_lines("server-*", REDIS_AWAY)
    bad = Load(stack.ports, revoked, threads=6, headers=behind_nat)
    good = Load(stack.ports, valid, threads=2, headers=behind_nat)
    time.sleep(seconds)
    bad.stop()
    good.stop()
    redis_away = log_lines("server-*", REDIS_AWAY) - redis_away
    refused = sum(n for status, n in good.statuses().items() if status != 200)
    blocked = [t for t, status in bad.results if status == 429]
    if not blocked:
        figure = f"valid refused {refused} of {good.done()}; no 429 in {bad.done()} bad requests"
        return Row("5", "revoked key from a NAT", figure, "0; 429 after the block", "FAIL")
    block_at = min(blocked)
    after = collections.Counter(status for t, status in bad.results if t >= block_at)
    span = max(t for t, _ in bad.results) - block_at
    # After the block the bucket refills at the limit's rate: that many 401s may pass.
    allowance = math.ceil(span * AUTH_FAILURES_PER_MINUTE / 60) + 2
    before = collections.Counter(status for t, status in bad.results if t < block_at)
    # Before it, the address's bucket: the limit, plus what refilled meanwhile.
    ramp = block_at - min(t for t, _ in bad.results)
    allowance_before = (
        AUTH_FAILURES_PER_MINUTE + math.ceil(ramp * AUTH_FAILURES_PER_MINUTE / 60) + 2
    )
    say(
        f"row 5: valid {dict(good.statuses())}; bad before the block {dict(before)}, "
        f"after {dict(after)} over {span:.1f} s; servers logged '{REDIS_AWAY}' {redis_away}×"
    )
    figure = (
        f"valid-key requests refused {refused} of {good.done()}; bad-key requests after the "
        f"block answered 429: {after.get(429, 0)} of {sum(after.values())} "
        f"({after.get(401, 0)} × 401 as the bucket refilled; {sum(before.values())} before)"
        + (f"; servers logged '{REDIS_AWAY}' {redis_away}× meanwhile" if redis_away else "")
    )
    others = sum(n for status, n in after.items() if status not in (401, 429))
    passed = (
        refused == 0
        and before.get(401, 0) <= allowance_before
        and after.get(401, 0) <= allowance
        and others == 0
    )
    return Row(
        "5",
        f"revoked key sent from a NAT address ({NAT_ADDRESS}, X-Forwarded-For) by 6 threads "
        "while a valid key is used by 2",
        figure,
        f"0; 429 after the first {AUTH_FAILURES_PER_MINUTE} (then ≤ {AUTH_FAILURES_PER_MINUTE}"
        "/min of 401 as the bucket refills)",
        "pass" if passed else "FAIL",
    )


def terminate_backends() -> int:
    """pg_terminate_backend of every backend of the database but this one; how many."""
    return query(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        (DATABASE,),
        database="postgres",
    )[0][0]


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


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


def row_reload(setup: Setup, bound: float = 2.0) -> Row:
    """Row 7: SIGHUP to the first app server's master under load (6 threads on it); latency
    before and after, requests cut off or past the client's 15 s timeout."""
    stack = setup.stack
    stack.serve()
    secret = setup.key("row7-reader")
    port = stack.ports[0]
    master = stack.servers[0]
    old_workers = set(stack.server_workers(0))
    load = Load([port], secret, threads=6)
    time.sleep(4)
    reloaded = time.monotonic()
    master.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and set(stack.server_workers(0)) & old_workers:
        time.sleep(0.1)  # until every old worker has stopped
    swapped = time.monotonic() - reloaded
    time.sleep(4)
    load.stop()
    with load.lock:
        before = [d for sent, d in load.latencies if sent < reloaded]
        after = [d for sent, d in load.latencies if sent >= reloaded - 1]
    statuses = load.statuses()
    cut = statuses.get(None, 0)
    errors = sum(n for status, n in statuses.items() if status is not None and status >= 500)
    late = sum(1 for d in after if d >= 15)
    p99 = percentile(after, 0.99)
    say(
        f"row 7: old workers gone {swapped:.1f} s after SIGHUP; before p50 "
        f"{percentile(before, 0.5) * 1000:.0f} ms p99 {percentile(before, 0.99) * 1000:.0f} "
        f"ms; across the reload p50 {percentile(after, 0.5) * 1000:.0f} ms p99 "
        f"{p99 * 1000:.0f} ms max {max(after, default=0) * 1000:.0f} ms; {dict(statuses)}"
    )
    passed = cut == 0 and errors == 0 and late == 0 and p99 <= bound and swapped < 30
    return Row(
        "7",
        "SIGHUP (graceful reload) to an app server's master under 6 threads of requests",
        f"latency before p50 {percentile(before, 0.5) * 1000:.0f} ms, p99 "
        f"{percentile(before, 0.99) * 1000:.0f} ms; from 1 s before the reload until 4 s "
        f"after its old workers stopped ({swapped:.1f} s): p50 "
        f"{percentile(after, 0.5) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max "
        f"{max(after, default=0) * 1000:.0f} ms; {late} past 15 s, {cut} cut off, "
        f"{errors} × 5xx of {sum(statuses.values())}",
        f"0 past 15 s, 0 cut off, 0 × 5xx; p99 ≤ {bound * 1000:.0f} ms",
        "pass" if passed else "FAIL",
    )


def logged_ids(key: int) -> tuple[set[str], int]:
    """The request ids in the request log for `key`, and how many of its rows repeat one."""
    rows = query("SELECT request_id FROM request_log WHERE key_id = %s", (key,))
    ids = [request_id for (request_id,) in rows]
    return set(ids), len(ids) - len(set(ids))


def counted_for(key: int) -> int:
    return int(
        query("SELECT coalesce(sum(count), 0) FROM usage_keyusagehour WHERE key_id = %s", (key,))[
            0
        ][0]
    )


def row_redis_crash(setup: Setup, before: float = 4, outage: float = 1, after: float = 4) -> Row:
    """Row 8: the app servers' Redis (the run's own) SIGKILLed under load and restarted from
    its append-only file: every answered request counted and in the request log."""
    stack = setup.stack
    own = setup.redis_of_its_own()
    name = "row8-reader"
    secret = setup.key(name)
    key = key_id(name)
    load = Load(stack.ports, secret, threads=8)
    time.sleep(before)
    sent_before = load.done()
    own.kill()
    say(f"row 8: Redis on {own.port} SIGKILLed after {sent_before} answers")
    time.sleep(outage)
    own.start()
    time.sleep(after)
    load.stop()
    statuses = load.statuses()
    cut = statuses.pop(None, 0)
    answered = sum(statuses.values())
    answered_ids = set(load.request_ids)
    moved = stack.manage("movebatches")
    say(f"row 8: answers {dict(statuses)}, {cut} cut off; movebatches: {moved}")
    # The app processes' own flushes (every 5 s) write what waited in their buffers while
    # Redis was away; bounded wait until every answered request is logged and counted.
    deadline = time.monotonic() + 45
    while True:
        logged, repeated = logged_ids(key)
        counted = counted_for(key)
        missing = answered_ids - logged
        if (not missing and counted >= answered) or time.monotonic() > deadline:
            break
        time.sleep(1)
    extra_logged = len(logged - answered_ids)  # requests whose answers never came back
    lost_counts = max(0, answered - counted)
    over = max(0, counted - answered - cut)
    redis_away = log_lines("server-*", REDIS_AWAY)
    settled, ran = settled_in_logs()
    say(
        f"row 8: request log {len(logged)} rows for {answered} answered ({len(missing)} "
        f"answered missing, {repeated} repeated, {extra_logged} without an answer); counted "
        f"{counted}; servers logged '{REDIS_AWAY}' {redis_away}×; settled {settled} requests "
        f"whose limiter call failed, {ran} of them run in Redis before the crash"
    )
    passed = (
        not missing
        and repeated == 0
        and extra_logged <= cut
        and lost_counts == 0
        and over == 0
        and answered > 0
    )
    return Row(
        "8",
        f"the app servers' Redis (append-only, fsync always) SIGKILLed after {before:g} s of "
        f"8 threads of requests and restarted {outage:g} s later",
        f"{answered} answered ({cut} cut off): {len(missing)} missing from the request log, "
        f"{repeated} logged twice, {extra_logged} logged without an answer; {counted} counted "
        f"in PostgreSQL ({lost_counts} lost, {over} more than sent); {settled} requests whose "
        f"limiter call failed settled by their mark, {ran} of them run by Redis before it died",
        "0 missing, 0 twice; counts = answered (+ cut off)",
        "pass" if passed else "FAIL",
    )


def row_quota_redis_crash(setup: Setup, allowance: int = 600, outage: float = 1) -> Row:
    """Row 10: a key with a quota under load from 8 threads while the app servers' Redis (the
    run's own, append-only) is SIGKILLed at about half the allowance and restarted: what the
    key is answered in all, against its allowance."""
    stack = setup.stack
    own = setup.redis_of_its_own()
    name = "row10-quota"
    secret = setup.key(name)
    manager = setup.key("row10-manager", ALL_SCOPES)
    key = key_id(name)
    status, body = call(
        stack.ports[0],
        f"/api/v1/keys/{key}/quota",
        manager,
        method="PATCH",
        body={"requests": allowance, "period": "month"},
    )
    if status != 200:
        raise RuntimeError(f"row 10: the quota was not set ({status}): {body[:200]!r}")
    load = Load(stack.ports, secret, threads=8)
    deadline = time.monotonic() + 60
    while load.statuses()[200] < allowance // 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    before = load.statuses()[200]
    own.kill()
    say(f"row 10: Redis on {own.port} SIGKILLed after {before} requests answered 200")
    time.sleep(outage)
    own.start()
    # Until the allowance is spent on every server: 200 refusals in a row.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with load.lock:
            last = [status for _, status in load.results[-200:]]
        if len(last) == 200 and all(status == 429 for status in last):
            break
        time.sleep(0.2)
    load.stop()
    statuses = load.statuses()
    answered, cut = statuses[200], statuses.get(None, 0)
    refused = statuses[429]
    _, spent = call(stack.ports[1], WORKSPACE_PATH, secret)
    quota_exceeded = b"quota-exceeded" in spent
    say(f"row 10: answers {dict(statuses)}; the next answer says quota-exceeded: {quota_exceeded}")
    # What was left after the restart, not a fresh allowance: in all, within one request a
    # worker of it either way. Short: a request whose script ran as Redis died is counted in
    # Redis and again in PostgreSQL. Past: what other workers admitted after the last read of
    # the worker that counts on in PostgreSQL (docs/operations.md, "Quotas").
    off = answered - allowance
    passed = abs(off) <= SERVERS * WORKERS_PER_SERVER + cut and quota_exceeded
    side = f"{off} past" if off > 0 else f"{-off} short of"
    return Row(
        "10",
        f"a key with a quota of {allowance} a month under 8 threads; the app servers' Redis "
        f"(append-only, fsync always) SIGKILLed after {before} answers and restarted "
        f"{outage:g} s later",
        f"{answered} answered 200 in all ({side} the allowance), "
        f"{refused} refused with 429, {cut} cut off; then quota-exceeded",
        f"what was left, not a fresh {allowance}: within one request a worker of {allowance}",
        "pass" if passed else "FAIL",
    )


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


USAGE_FLUSH_SLACK = 6  # one app flush (USAGE_FLUSH_SECONDS = 5) after the load stops


def table(rows: list[Row]) -> str:
    lines = ["| row | fault | figure | required | result |", "|---|---|---|---|---|"]
    for row in rows:
        cells = [row.row, row.fault, row.figure, row.required, row.result]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="1,2,3,4,5,6,7,8,9,10", help="rows to run, e.g. 1,3")
    parser.add_argument("--requests", type=int, default=3000, help="row 3's requests (3000)")
    parser.add_argument(
        "--ports",
        default="",
        help="the ports to serve on: the three app servers' and the webhook receiver's, and "
        "optionally rows 8 and 9's own Redis, e.g. 18001,18002,18003,18004,18005 (default: "
        "free ones)",
    )
    options = parser.parse_args()
    wanted = {part.strip() for part in options.only.split(",") if part.strip()}
    if not wanted <= {str(number) for number in range(1, 11)}:
        parser.error("--only takes row numbers from 1 to 10")
    ports: list[int] | None = None
    if options.ports:
        try:
            ports = [int(part) for part in options.ports.split(",")]
        except ValueError:
            parser.error("--ports takes four or five port numbers separated by commas")
        if len(ports) not in (SERVERS + 1, SERVERS + 2) or len(set(ports)) != len(ports):
            parser.error(
                "--ports takes four or five different ports: three app servers, one receiver, "
                "and optionally the Redis of rows 8 and 9"
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
        if ports and len(ports) == SERVERS + 2:
            setup.redis_port = ports[-1]
        if "1" in wanted:
            rows.append(row_terminated_backends(setup))
        if "2" in wanted:
            rows.append(row_killed_worker(setup))
        if "3" in wanted:
            rows.append(row_killed_app_worker(setup, options.requests, redis_on=True))
            rows.append(row_killed_app_worker(setup, options.requests, redis_on=False))
        if "4" in wanted:
            rows.append(row_connections(setup))
        if "5" in wanted:
            rows.append(row_nat(setup))
        if "6" in wanted:
            rows.append(row_terminated_writes(setup))
        if "7" in wanted:
            rows.append(row_reload(setup))
        if "8" in wanted:
            rows.append(row_redis_crash(setup))
        if "9" in wanted:
            rows.append(row_killed_mover(setup))
        if "10" in wanted:
            rows.append(row_quota_redis_crash(setup))
    finally:
        if setup is not None:
            setup.stack.stop()
            setup.receiver.stop()
            if setup.pgbouncer_pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(setup.pgbouncer_pid, signal.SIGTERM)
            say("stopped every process this run started")
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
