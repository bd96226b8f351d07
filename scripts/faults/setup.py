"""Setting the run up (PgBouncer, a fresh database, Redis, keys, the stack) and the checks
several rows read (log lines, webhook tasks, what was logged and counted)."""

import collections
import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg
from psycopg import sql

from faults.base import (
    ALL_SCOPES,
    DATABASE,
    DATABASE_MARK,
    OWNER,
    POSTGRES_PORT,
    ROOT,
    SCRATCH,
    SERVERS,
    Ports,
    say,
)
from faults.processes import call, free_port, port_open, query
from faults.receiver import Receiver
from faults.stack import OwnRedis, Stack


@dataclass
class Setup:
    stack: Stack
    receiver: Receiver
    workspace: str
    admin_key: str
    pgbouncer_pid: int | None  # the run's own PgBouncer, to stop at the end
    own_redis: OwnRedis

    def redis_of_its_own(self) -> OwnRedis:
        """The run's own Redis, which rows 8-10 kill and restart, with the servers and task
        workers up on it."""
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


def start_pgbouncer(port: int) -> int:
    """The run's own PgBouncer on `port`, set up as the project ships it
    (scripts/start_pgbouncer.sh, its files under the run's scratch folder); its pid."""
    if port_open(port):
        raise RuntimeError(f"something already listens on 127.0.0.1:{port}: choose --ports")
    folder = SCRATCH / "pgbouncer"
    env = {**os.environ, "PGBOUNCER_PORT": str(port), "PGBOUNCER_DIR": str(folder)}
    subprocess.run(
        ["bash", "scripts/start_pgbouncer.sh"], cwd=ROOT, env=env, check=True, timeout=60
    )
    pid = int((folder / "pgbouncer.pid").read_text())
    say(f"PgBouncer of the run's own on 127.0.0.1:{port} (pid {pid})")
    return pid


def fresh_database() -> None:
    """Drop the run's database if an earlier run made it, then make it anew; refuse to touch
    a database of the same name that a run did not make."""
    with psycopg.connect(
        host="127.0.0.1", port=POSTGRES_PORT, user="postgres", dbname="postgres", autocommit=True
    ) as conn:
        found = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (DATABASE,),
        ).fetchone()
        if found is not None and found[0] != DATABASE_MARK:
            raise RuntimeError(
                f"A database {DATABASE} exists that no fault run made: it is left alone. Set "
                "FAULT_RUN_DATABASE to another name, or drop it yourself."
            )
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DATABASE))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        conn.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(DATABASE), sql.Literal(DATABASE_MARK)
            )
        )


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
    """Everything the rows run against, on `ports` (three app servers, the receiver, PgBouncer,
    Redis) or free ones. Nothing of the machine's own is used: the run's PgBouncer and Redis
    are its own, and its database is one it made."""
    if stale := leftovers():
        raise RuntimeError(
            f"Processes of an earlier fault run still use {DATABASE}: {stale}. Stop them first "
            f"(kill -- -PGID for each, see ps -o pid,pgid,args -p {','.join(map(str, stale))})."
        )
    SCRATCH.mkdir(parents=True, exist_ok=True)
    for old in SCRATCH.glob("*.log"):
        old.unlink()
    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed: apt-get install redis-server.")
    if not Path("/usr/sbin/pgbouncer").exists():
        raise RuntimeError("PgBouncer is not installed: apt-get install pgbouncer (Debian's).")
    Ports.pgbouncer = ports[SERVERS + 1] if ports else free_port()
    Ports.redis = ports[SERVERS + 2] if ports else free_port()
    fresh_database()  # before anything starts: a database of yours stops the run here
    pgbouncer_pid = start_pgbouncer(Ports.pgbouncer)
    receiver = Receiver(ports[SERVERS] if ports else 0)
    stack = Stack(receiver, ports[:SERVERS] if ports else [free_port() for _ in range(SERVERS)])
    try:
        own_redis = OwnRedis(stack, Ports.redis)
        stack.redis_url = own_redis.url
        stack.manage("migrate", "--noinput")
        # A release collects its static files: /healthz is 503 until it has (docs/operations.md).
        stack.manage("collectstatic", "--noinput")
        say(f"database {DATABASE} created and migrated, static files collected")
        workspace = stack.manage("createworkspace", "Fault Run", "--owner", OWNER)
        setup = Setup(stack, receiver, workspace, "", pgbouncer_pid, own_redis)
        setup.admin_key = setup.key("fault-admin", ALL_SCOPES)
        stack.manage("webhooks", "add", "--workspace", workspace, "--url", receiver.url)
    except BaseException:  # nothing it started is left running
        stack.stop()
        receiver.stop()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pgbouncer_pid, signal.SIGTERM)
        raise
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
