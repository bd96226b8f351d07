"""What requests leave behind, gathered in memory and written in batches, off the request path.

A request adds to this process's buffer: its count (per key, hour, operation and outcome), the
key's last use, the scopes and chosen objects it exercised, the network it came from. Every
`USAGE_FLUSH_SECONDS` a daemon thread hands what was gathered to the flushers the apps register
(`register_flusher`), which write it in a few statements. So no request waits for a write, and
10,000 keys in rotation cost what one key costs.

If a worker dies, what it gathered since its last flush is lost: at most a few seconds of
counts and stamps, never a wrong total (flushes only add). With `USAGE_FLUSH_SECONDS = 0` every
request flushes at its end (the tests, and anyone who wants every stamp at once).
"""

import atexit
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

logger = logging.getLogger("apps.api")


@dataclass
class Gathered:
    """One flush's worth: counts by (key id, hour, operation, outcome); per key the last use
    (time, address, whether by the previous secret, whether its first); stamps by (key id,
    field, name); first sightings of networks by (key id, network) → (time, address)."""

    counts: Counter[tuple[int, datetime, str, str]] = field(default_factory=Counter)
    last_use: dict[int, tuple[datetime, str | None, bool, bool]] = field(default_factory=dict)
    stamps: dict[tuple[int, str, str], datetime] = field(default_factory=dict)
    networks: dict[tuple[int, str], tuple[datetime, str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.counts or self.last_use or self.stamps or self.networks)


Flusher = Callable[[Gathered], None]
_flushers: list[Flusher] = []


def register_flusher(flusher: Flusher) -> None:
    """Have `flusher(gathered)` write its part of every flush (apps call this in ready())."""
    if flusher not in _flushers:
        _flushers.append(flusher)


class _Buffer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.gathered = Gathered()
        self.thread_pid: int | None = None

    def take(self) -> Gathered:
        with self.lock:
            gathered, self.gathered = self.gathered, Gathered()
        return gathered

    def ensure_flusher(self) -> None:
        """A flushing thread in this process (a forked worker starts its own)."""
        if self.thread_pid == os.getpid():
            return
        with self.lock:
            if self.thread_pid == os.getpid():
                return
            self.thread_pid = os.getpid()
        threading.Thread(target=self._run, name="usage-flush", daemon=True).start()

    def _run(self) -> None:
        while True:
            time.sleep(max(1.0, float(settings.USAGE_FLUSH_SECONDS)))
            usage_flush()


_buffer = _Buffer()


def add(update: Callable[[Gathered], None]) -> None:
    """Apply `update` to the buffer under its lock."""
    with _buffer.lock:
        update(_buffer.gathered)


def request_done() -> None:
    """At the end of an API or MCP request: flush now when flushing is synchronous, else make
    sure this process has its flushing thread."""
    if settings.USAGE_FLUSH_SECONDS <= 0:
        usage_flush()
    else:
        _buffer.ensure_flusher()


def usage_flush() -> None:
    """Write what was gathered since the last flush. A flusher that fails loses its part of
    this flush (logged), never the others'."""
    gathered = _buffer.take()
    if not gathered:
        return
    try:
        for flusher in _flushers:
            try:
                flusher(gathered)
            except Exception:
                logger.exception("Writing usage failed; this flush's part of it is lost.")
    finally:
        if threading.current_thread().name == "usage-flush":
            # The flushing thread's own connection, closed after every flush whatever
            # CONN_MAX_AGE says: between flushes a process holds one connection, its
            # requests', and a pooler or max_connections counts one per app process.
            from django.db import connections

            connections.close_all()


atexit.register(usage_flush)


# (key id, address) → when this process last queued its network: queued at most every ten
# minutes per key and address in a process; the flush decides against the database whether
# the network is new.
_networks_queued: dict[tuple[int, str], float] = {}
NETWORK_REQUEUE_SECONDS = 600


def network_of(address: str) -> str | None:
    """The network an address is judged by: its IPv4 /24 or IPv6 /64."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if ip.version == 4 else 64
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


def note_network(key_id: int, address: str | None, now: datetime) -> None:
    """Queue the network of a key's request for the flush, unless this address was queued
    lately (looked up before any address is parsed: this runs on every request)."""
    if not address:
        return
    seen = (key_id, address)
    moment = time.monotonic()
    queued = _networks_queued.get(seen)
    if queued is not None and moment - queued < NETWORK_REQUEUE_SECONDS:
        return
    if (network := network_of(address)) is None:
        return
    if len(_networks_queued) >= 100_000:
        _networks_queued.clear()
    _networks_queued[seen] = moment
    mark = (key_id, network)

    def update(gathered: Gathered) -> None:
        gathered.networks.setdefault(mark, (now, address))

    add(update)


def usage_reset() -> None:
    """Forget everything gathered and queued (for tests)."""
    _buffer.take()
    _networks_queued.clear()
