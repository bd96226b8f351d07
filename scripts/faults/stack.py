"""The deployment: three gunicorn app servers, two task workers, and the run's own Redis."""

import contextlib
import itertools
import os
import secrets
import signal
import subprocess
import sys
import time
from datetime import datetime

import redis

from faults.base import (
    BIN,
    DATABASE,
    POSTGRES_PORT,
    ROOT,
    SCRATCH,
    SERVERS,
    WORKERS_PER_SERVER,
    Ports,
    say,
)
from faults.processes import call, children
from faults.receiver import Receiver


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
        self.redis_url = ""  # the run's own Redis (faults.setup), once it is started
        self.served_url = ""

    def env(self, *, redis_on: bool = True, pgbouncer: bool = True) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
        }
        port = Ports.pgbouncer if pgbouncer else POSTGRES_PORT
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
