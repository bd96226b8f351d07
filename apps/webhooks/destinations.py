"""Where a webhook may be sent. Endpoints are HTTPS URLs (plain HTTP only to loopback, and only
while WEBHOOKS_ALLOW_PRIVATE is on: development and tests). In production no private, loopback,
link-local, multicast, reserved or cloud-metadata address is reached: the check runs on the
addresses the name resolves to at the moment of connecting, and the connection goes to the
address that was checked, so a name that resolves elsewhere a second later (DNS rebinding)
changes nothing."""

import functools
import ipaddress
import os
import socket
import ssl
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings
from django.core.exceptions import ValidationError

TIMEOUT_SECONDS = 10.0


def clean_url(url: str) -> str:
    """The endpoint URL as given, or ValidationError saying what is wrong with it."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValidationError("Enter a full URL starting with https://.")
    if parts.username or parts.password:
        raise ValidationError("Leave user names and passwords out of the URL.")
    if parts.scheme == "http" and not (
        settings.WEBHOOKS_ALLOW_PRIVATE and _is_loopback_name(parts.hostname)
    ):
        raise ValidationError(
            "Use https://. Plain http:// is accepted only for loopback addresses in development."
        )
    if not settings.WEBHOOKS_ALLOW_PRIVATE:
        literal = _literal_address(parts.hostname)
        if literal is not None and not address_allowed(literal):
            raise ValidationError("This address is private or reserved: webhooks cannot reach it.")
    return url


def _is_loopback_name(host: str) -> bool:
    literal = _literal_address(host)
    return host == "localhost" or (literal is not None and literal.is_loopback)


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def address_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether a delivery may connect to `ip` (always, while WEBHOOKS_ALLOW_PRIVATE is on)."""
    if settings.WEBHOOKS_ALLOW_PRIVATE:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class DestinationRefused(httpcore.ConnectError):
    """The endpoint's name resolved to an address deliveries may not reach."""


class _GuardedBackend(httpcore.SyncBackend):
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
        refused = [str(a) for a in addresses if not address_allowed(a)]
        if refused:
            raise DestinationRefused(f"{host} resolves to a private address ({refused[0]})")
        # Connect to the address just checked, never to the name again.
        return super().connect_tcp(str(addresses[0]), port, timeout, local_address, [])


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()  # loading the CA bundle takes tens of milliseconds


_clients: dict[int, httpx.Client] = {}


def delivery_client() -> httpx.Client:
    """This process's HTTP client for deliveries (kept, so connections are reused): 10 s in
    all, no redirects, no proxies from the environment, connections only to addresses
    `address_allowed` accepts."""
    client = _clients.get(os.getpid())
    if client is None:
        client = _clients[os.getpid()] = _new_client()
    return client


def _new_client() -> httpx.Client:
    transport = httpx.HTTPTransport(retries=0)
    transport._pool = httpcore.ConnectionPool(  # the only way in for a network backend
        ssl_context=_ssl_context(),
        max_connections=4,
        network_backend=_GuardedBackend(),
    )
    return httpx.Client(
        transport=transport,
        timeout=TIMEOUT_SECONDS,
        follow_redirects=False,
        trust_env=False,
        headers={"User-Agent": "Gatehouse-Webhooks/1"},
    )
