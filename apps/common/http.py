import functools
import ipaddress

from django.conf import settings
from django.http import HttpRequest, QueryDict


@functools.lru_cache(maxsize=4096)
def ip_address_or_none(value: str) -> str | None:
    """`value` as a normalised IP address, or None when it is not one.

    Takes the forms proxies write: `203.0.113.7`, `2001:db8::1`, `203.0.113.7:51234`,
    `[2001:db8::1]:443`. Kept for the most recent 4,096 values: every request asks this of
    its peer's address, and a caller's address repeats from one request to the next.
    """
    value = value.strip()
    if "%" in value:
        # An IPv6 zone id (fe80::1%eth0) names an interface of the sender's machine: it means
        # nothing here, and PostgreSQL's inet type refuses it.
        return None
    if value.startswith("[") and "]" in value:
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str | None:
    """The caller's address: REMOTE_ADDR, or the entry our trusted proxies added to
    X-Forwarded-For. Entries further left were written by the client and are not trusted; an
    entry that is not an IP address is ignored, and the peer's address is used instead.
    Worked out once per request."""
    meta = request.META
    known = meta.get("gatehouse.client_ip", meta)  # META itself: not worked out yet
    if known is not meta:
        return known
    meta["gatehouse.client_ip"] = address = _client_ip(request)
    return address


def _client_ip(request: HttpRequest) -> str | None:
    peer = ip_address_or_none(request.META.get("REMOTE_ADDR", ""))
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        forwarded = [entry for entry in forwarded if entry.strip()]
        if len(forwarded) >= proxies:
            return ip_address_or_none(forwarded[-proxies]) or peer
    return peer


def has_nul(params: QueryDict) -> bool:
    """Whether a query or form holds a NUL character in a name or a value: no parameter here
    may, and PostgreSQL's text types refuse it (a 500 if it reached a query)."""
    return any(
        "\x00" in name or any("\x00" in v for v in values) for name, values in params.lists()
    )
