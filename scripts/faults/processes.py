"""Processes, sockets, the database and the load: what the rows call and count with."""

import collections
import contextlib
import dataclasses
import http.client
import itertools
import json
import os
import socket
import threading
import time
from datetime import datetime
from pathlib import Path

import psycopg

from faults.base import DATABASE, POSTGRES_PORT, WORKSPACE_PATH


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


@dataclasses.dataclass
class Outage:
    """The answers around an outage: how many, 503s while it lasted, cut off, other 5xx, the
    seconds from its end to the first 200 (None: never), the slowest answer's seconds."""

    answered: int
    refused: int
    cut: int
    other_5xx: int
    back: float | None
    slowest: float

    def __str__(self) -> str:
        back = "never" if self.back is None else f"{self.back:.2f} s"
        return (
            f"{self.answered} answered, {self.refused} × 503 while it lasted, {self.other_5xx} "
            f"other 5xx, {self.cut} cut off; the slowest answer {self.slowest:.1f} s; 200 "
            f"again {back} after"
        )

    def served_through(self, bound: float) -> bool:
        """No answer cut off, no 5xx but 503, none slower than `bound`, 200 within 3 s."""
        return (
            self.cut == 0
            and self.other_5xx == 0
            and self.slowest <= bound
            and self.back is not None
            and self.back <= 3
        )


class Load:
    """GETs of the workspace with one key from `threads` threads, spread over the servers in
    turn, each thread pausing `pause` s between its requests, in the background until `total`
    were sent or stop(); results are (time, status). `pinned`: each thread keeps to one server
    (thread i to server i mod n), so that no server has more requests at once than threads of
    its own: an answer's time is then the app's, never a wait in a busy server's queue."""

    def __init__(
        self,
        ports: list[int],
        key: str,
        *,
        total: int | None = None,
        threads: int = 8,
        headers: dict[str, str] | None = None,
        pause: float = 0.0,
        pinned: bool = False,
    ) -> None:
        self.ports, self.key, self.total, self.headers = ports, key, total, headers
        self.pinned = pinned
        self.pause = pause
        self.results: list[tuple[float, int | None]] = []
        self.latencies: list[tuple[float, float]] = []  # (when sent, seconds to the answer)
        self.request_ids: list[str] = []  # the Request-Id of every answer that came back
        self.answered: list[tuple[float, str]] = []  # (when it came back, its Request-Id)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.numbers = itertools.count()
        self.threads = [
            threading.Thread(target=self._run, args=(index,), daemon=True)
            for index in range(threads)
        ]
        for thread in self.threads:
            thread.start()

    def _run(self, index: int) -> None:
        while not self.stopping.is_set():
            number = next(self.numbers)
            if self.total is not None and number >= self.total:
                return
            port = self.ports[(index if self.pinned else number) % len(self.ports)]
            sent = time.monotonic()
            answer: dict[str, str] = {}
            status, _ = call(
                port, WORKSPACE_PATH, self.key, headers=self.headers, answer_headers=answer
            )
            with self.lock:
                self.results.append((time.monotonic(), status))
                if status is not None and answer.get("Request-Id"):
                    self.request_ids.append(answer["Request-Id"])
                    self.answered.append((time.monotonic(), answer["Request-Id"]))
                self.latencies.append((sent, time.monotonic() - sent))
            if self.pause:
                self.stopping.wait(self.pause)

    def done(self) -> int:
        return len(self.results)

    def outage(self, began: float, ended: float) -> "Outage":
        """What the answers say of a database outage from `began` to `ended`."""
        with self.lock:
            results, latencies = list(self.results), list(self.latencies)
        during = [status for at, status in results if began <= at <= ended + 1]
        back = next((at - ended for at, status in results if at > ended and status == 200), None)
        return Outage(
            answered=len(results),
            refused=sum(1 for status in during if status == 503),
            cut=sum(1 for _, status in results if status is None),
            other_5xx=sum(1 for _, s in results if s is not None and s >= 500 and s != 503),
            back=back,
            slowest=max((seconds for sent, seconds in latencies if sent >= began - 1), default=0),
        )

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


def terminate_backends() -> int:
    """pg_terminate_backend of every backend of the database but this one; how many."""
    return query(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        (DATABASE,),
        database="postgres",
    )[0][0]
