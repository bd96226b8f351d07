"""bench/request_log.py's reads through HTTP: a gunicorn server (one sync worker, DEBUG off, as
production serves) on the bench's database, timed from a client on loopback, with the machine's
load average printed before and after, since on a shared machine that is what the numbers
depend on most.

The first request on a fresh worker (its first database connection: the partitions planned
for the first time) is printed apart from the warm runs' median, 90th percentile and worst.
"""

import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def _serve(port: int) -> "subprocess.Popen[bytes]":
    env = dict(
        os.environ,
        DEBUG="false",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="false",
        API_RATE_LIMIT_PER_MINUTE="1000000",
        REDIS_URL="",
        LOG_LEVEL="WARNING",
    )
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--log-level", "warning"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code < 600:
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
    raise RuntimeError("gunicorn did not answer within 60 s (its errors are above)")


def http_reads(reads: dict[str, tuple[str, dict[str, str]]], repeat: int, port: int = 0) -> None:
    """Time each read (name → path, headers) through HTTP on a fresh server: the first request
    apart, then `repeat` warm ones. Prints a Markdown table."""
    port = port or _free_port()
    print(f"\nThrough HTTP (gunicorn, 1 sync worker, port {port}); load average {_load()}")
    print("\n| read through HTTP | first, ms | median ms | p90 ms | worst ms | status |")
    print("|---|---|---|---|---|---|")
    for name, (path, headers) in reads.items():
        server = _serve(port)  # a fresh worker for each: its first request is a cold one
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                times, statuses = [], set()
                for _ in range(repeat + 1):
                    started = time.perf_counter()
                    answer = client.get(path, headers=headers)
                    times.append((time.perf_counter() - started) * 1000)
                    statuses.add(answer.status_code)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
        first, warm = times[0], sorted(times[1:])
        p90 = warm[max(0, int(len(warm) * 0.9) - 1)]
        print(
            f"| {name} | {first:.1f} | {statistics.median(warm):.2f} | {p90:.2f} | "
            f"{warm[-1]:.2f} | {', '.join(map(str, sorted(statuses)))} |",
            flush=True,
        )
    print(f"\nLoad average (1, 5, 15 min) after: {_load()}; {os.cpu_count()} CPUs.")
