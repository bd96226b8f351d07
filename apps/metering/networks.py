"""The networks a key's requests come from, queued for the flush, which decides against the
database whether one is new (apps/usage: `key.new_network`)."""

import ipaddress
import time
from datetime import datetime

from .buffer import Gathered, add

# (key id, address) → when this process last queued its network: queued at most every ten
# minutes per key and address in a process; the flush decides against the database whether
# the network is new.
_networks_queued: dict[tuple[int, str], float] = {}
NETWORK_REQUEUE_SECONDS = 600


def network_of(address: str) -> str | None:
    """The network an address is judged by: its IPv4 /24 or IPv6 /64."""
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


def networks_reset() -> None:
    """Forget what was queued (for tests)."""
    _networks_queued.clear()
