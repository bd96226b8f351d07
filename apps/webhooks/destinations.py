"""Where a webhook may be sent. Endpoints are HTTPS URLs (plain HTTP only to loopback, and only
while WEBHOOKS_ALLOW_PRIVATE is on: development and tests). In production no private, loopback,
link-local, multicast, reserved or cloud-metadata address is reached: the check runs on the
addresses the name resolves to at the moment of connecting, and the connection goes to the
address that was checked, so a name that resolves elsewhere a second later (DNS rebinding)
changes nothing."""

import contextlib
import functools
import ipaddress
import os
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings

from apps.common.validation import InvalidInput


def clean_url(url: str) -> str:
    """The endpoint URL as given, or InvalidInput saying what is wrong with it (parsed as
    the delivery's HTTP client will parse it, so a URL saved is a URL it can send to)."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        hostname, _port = parts.hostname, parts.port
        _host = httpx.URL(url).host  # what the client decodes: an invalid A-label fails here
    except (ValueError, httpx.InvalidURL):  # a bad port, IPv6 literal or international name
        raise InvalidInput("url", "This URL cannot be parsed: check its host and port.") from None
    if parts.scheme not in ("https", "http") or not hostname:
        raise InvalidInput("url", "Enter a full URL starting with https://.")
    if parts.username or parts.password:
        raise InvalidInput("url", "Leave user names and passwords out of the URL.")
    if parts.scheme == "http" and not (
        settings.WEBHOOKS_ALLOW_PRIVATE and _is_loopback_name(hostname)
    ):
        raise InvalidInput(
            "url",
            "Use https://. Plain http:// is accepted only for loopback addresses in development.",
        )
    if not settings.WEBHOOKS_ALLOW_PRIVATE:
        literal = _literal_address(hostname)
        if literal is not None and not address_allowed(literal):
            raise InvalidInput(
                "url", "This address is private or reserved: webhooks cannot reach it."
            )
    return url


def _is_loopback_name(host: str) -> bool:
    literal = _literal_address(host)
    return host == "localhost" or (literal is not None and literal.is_loopback)


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


# Ranges Python's `is_global` (3.11) lets through that lead inside all the same: the IPv4
# special-purpose block (cloud metadata at 192.0.0.192), IPv4 embedded in IPv6 by NAT64, 6to4
# and the deprecated compatible form, and IPv6 site-local addresses.
DENIED = [
    ipaddress.ip_network(n)
    for n in ("192.0.0.0/24", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "::/96", "fec0::/10")
]


def address_allowed(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address, *, allow_private: bool | None = None
) -> bool:
    """Whether a delivery may connect to `ip` (always, while WEBHOOKS_ALLOW_PRIVATE is on, or
    when the caller says private addresses are allowed)."""
    if settings.WEBHOOKS_ALLOW_PRIVATE if allow_private is None else allow_private:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip in network for network in DENIED if network.version == ip.version):
        return False
    return ip.is_global and not ip.is_multicast


class DestinationRefused(httpcore.ConnectError):
    """The endpoint's name resolved to an address deliveries may not reach."""


class _GuardedBackend(httpcore.SyncBackend):
    def __init__(self, allow_private_setting: str = "WEBHOOKS_ALLOW_PRIVATE") -> None:
        self.allow_private_setting = allow_private_setting

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: object = None,
    ) -> httpcore.NetworkStream:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        addresses = [ipaddress.ip_address(info[4][0]) for info in found]
        allow = bool(getattr(settings, self.allow_private_setting))
        refused = [str(a) for a in addresses if not address_allowed(a, allow_private=allow)]
        if refused:
            # The address itself is not told: an error shown to owners must not map the inside.
            raise DestinationRefused(f"{host} resolves to a private or reserved address")
        # Connect to the address just checked, never to the name again.
        stream = super().connect_tcp(str(addresses[0]), port, _left(timeout), local_address, [])
        return _DeadlineStream(stream)


# The moment the current attempt must end: each read and write of this thread's deliveries
# waits at most until then, so a receiver trickling its answer a byte at a time is cut off at
# the limit too (httpx's own timeouts count per read).
_deadline = threading.local()


def _left(timeout: float | None) -> float:
    until = getattr(_deadline, "at", None)
    if until is None:
        return timeout if timeout is not None else float(settings.WEBHOOK_TIMEOUT_SECONDS)
    left = until - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the delivery's time is up")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        tls = self._stream.start_tls(ssl_context, server_hostname, _left(timeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> object:
        return self._stream.get_extra_info(info)


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Every connection, read and write of this thread's deliveries inside the block ends by
    `seconds` from now."""
    _deadline.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _deadline.at = None


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()  # loading the CA bundle takes tens of milliseconds


_clients: dict[int, httpx.Client] = {}


def delivery_client() -> httpx.Client:
    """This process's HTTP client for deliveries (kept, so connections are reused): each
    attempt within `time_limit`, no redirects, no proxies from the environment, connections
    only to addresses `address_allowed` accepts."""
    client = _clients.get(os.getpid())
    if client is None:
        client = _clients[os.getpid()] = _new_client()
    return client


def delivery_clients_close() -> None:
    """Close the kept clients and their connections (the tests, between two tests)."""
    while _clients:
        _clients.popitem()[1].close()


def _new_client() -> httpx.Client:
    return guarded_client(
        timeout=float(settings.WEBHOOK_TIMEOUT_SECONDS), user_agent="Gatehouse-Webhooks/1"
    )


def guarded_client(
    *,
    timeout: float,
    user_agent: str,
    allow_private_setting: str = "WEBHOOKS_ALLOW_PRIVATE",
    ssl_context: ssl.SSLContext | None = None,
) -> httpx.Client:
    """An HTTP client for addresses given by outsiders (webhook endpoints, OAuth clients'
    metadata documents): no redirects, no proxies from the environment, and connections only
    to public addresses unless the named setting allows private ones. Use it inside
    `time_limit` to bound the whole exchange."""
    transport = httpx.HTTPTransport(retries=0)
    transport._pool = httpcore.ConnectionPool(  # the only way in for a network backend
        ssl_context=ssl_context or _ssl_context(),
        max_connections=4,
        network_backend=_GuardedBackend(allow_private_setting),
    )
    return httpx.Client(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": user_agent},
    )
