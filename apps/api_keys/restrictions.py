"""What a key may reach beyond its scopes (docs/product.md §2, "Restrictions"): chosen objects
per group, allowed networks, and its own rate limit. Each is optional, set at creation and only
ever tightened. One definition of "at least as tight" serves narrowing and minting."""

import functools
import ipaddress
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from apps.common.validation import InvalidInput

# The groups whose objects a key can be limited to, as the API names them.
RESOURCE_GROUPS = ("communities", "pages", "products")
NOUNS = {"communities": "community", "pages": "page", "products": "product"}
MAX_NETWORKS = 20
MAX_CHOSEN = 500
RATE_LIMIT_MIN, RATE_LIMIT_MAX = 1, 100_000

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Restrictions:
    """A key's restrictions. A group's ids are None for all of its objects; an empty tuple of
    networks allows any address; a rate limit of None is the server's default."""

    communities: tuple[int, ...] | None = None
    pages: tuple[int, ...] | None = None
    products: tuple[int, ...] | None = None
    networks: tuple[str, ...] = ()
    rate_limit_per_minute: int | None = None
    chosen: dict[str, tuple[int, ...] | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        chosen = {group: getattr(self, group) for group in RESOURCE_GROUPS}
        object.__setattr__(self, "chosen", chosen)

    @property
    def is_empty(self) -> bool:
        return self == Restrictions()

    def as_json(self) -> dict[str, Any]:
        """The `restrictions` object of a key's API record."""
        return {
            **{group: None if ids is None else list(ids) for group, ids in self.chosen.items()},
            "networks": list(self.networks),
            "rateLimitPerMinute": self.rate_limit_per_minute,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> "Restrictions":
        """Restrictions from the API's `restrictions` object (as audit events store it)."""
        return cls(
            **{
                group: None if value.get(group) is None else tuple(value[group])
                for group in RESOURCE_GROUPS
            },
            networks=tuple(value.get("networks") or ()),
            rate_limit_per_minute=value.get("rateLimitPerMinute"),
        )

    def summary(self) -> str:
        """As the key list reads it: "3 communities · 2 networks · 60 a minute"; "" for none."""
        parts = []
        for group, ids in self.chosen.items():
            if ids is not None:
                noun = group if len(ids) != 1 else NOUNS[group]
                parts.append(f"{len(ids)} {noun}")
        if self.networks:
            parts.append(f"{len(self.networks)} network{'s' if len(self.networks) != 1 else ''}")
        if self.rate_limit_per_minute is not None:
            parts.append(f"{self.rate_limit_per_minute:,} a minute")
        return " · ".join(parts)

    def wider_than(self, limit: "Restrictions", *, default_rate: int) -> str | None:
        """Why these restrictions allow something `limit` does not, or None when they are at
        least as tight: a subset of each limited group, networks inside the allowed ones, a
        rate limit no higher."""
        for group, bound in limit.chosen.items():
            mine = self.chosen[group]
            if bound is None:
                continue
            if mine is None:
                return f"it would reach all {group}, and this key is limited to selected {group}"
            extra = sorted(set(mine) - set(bound))
            if extra:
                return f"{NOUNS[group]} {extra[0]} is outside this key's {group}"
        if limit.networks:
            if not self.networks:
                return "it would allow any network, and this key allows only some"
            outside = [n for n in self.networks if not network_inside(n, limit.networks)]
            if outside:
                return f"network {outside[0]} is outside this key's allowed networks"
        # A default of 0 or less turns limits off: unlimited, above any number.
        default = default_rate if default_rate > 0 else math.inf
        bound_rate = limit.rate_limit_per_minute or default
        mine_rate = self.rate_limit_per_minute or default
        if mine_rate > bound_rate:
            if mine_rate == math.inf:
                return f"it would have no rate limit, and this key allows {bound_rate:,} a minute"
            return f"a rate limit of {mine_rate:,} a minute is above this key's {bound_rate:,}"
        return None

    def updated(self, changes: dict[str, Any]) -> "Restrictions":
        return replace(self, **changes)

    def as_changes(self) -> dict[str, Any]:
        """Every field, as `updated` and api_key_narrow take them."""
        return {
            **self.chosen,
            "networks": self.networks,
            "rate_limit_per_minute": self.rate_limit_per_minute,
        }


def network_inside(network: str, allowed: Iterable[str]) -> bool:
    candidate = ipaddress.ip_network(network)
    return any(
        candidate.version == outer.version and candidate.subnet_of(outer)  # type: ignore[arg-type]
        for outer in map(ipaddress.ip_network, allowed)
    )


@functools.lru_cache(maxsize=4096)
def _parsed(networks: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(n) for n in networks)


def address_allowed(networks: Iterable[str], address: str | None) -> bool:
    """Whether a client address falls in one of `networks` (none: any address). An IPv4
    address seen as IPv6 (::ffff:10.0.0.1) is matched as IPv4. No query: the ranges come on
    the key's row, parsed once per distinct list."""
    networks = tuple(networks)
    if not networks:
        return True
    if address is None:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in _parsed(networks))


def clean_network(value: Any, field: str = "networks") -> str:
    """One CIDR range, normalised (`2001:DB8::/32` → `2001:db8::/32`, `10.1.2.3` → `10.1.2.3/32`).

    A range with host bits set (`10.0.0.1/8`) is refused, naming the range it may have meant:
    silently widening or moving what a person typed could let in an address they did not mean.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, "Each network must be a CIDR range such as 203.0.113.0/24.")
    text = value.strip()
    if "%" in text:
        raise InvalidInput(
            field, f"{text!r} carries an interface (%…), which means nothing to this server."
        )
    try:
        return str(ipaddress.ip_network(text))
    except ValueError:
        pass
    try:
        loose = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise InvalidInput(
            field, f"{text!r} is not an IPv4 or IPv6 range; write it as 203.0.113.0/24."
        ) from None
    raise InvalidInput(
        field,
        f"{text} has host bits set; the range it falls in is {loose}. Write {loose}, or the "
        f"address alone ({text.split('/')[0]}) for that one address.",
    )


def clean_networks(value: Any, field: str = "networks") -> tuple[str, ...]:
    """Up to 20 ranges, each normalised, duplicates dropped, in the order given."""
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(field, "networks must be a list of CIDR ranges.")
    cleaned = tuple(dict.fromkeys(clean_network(item, field) for item in value))
    if len(cleaned) > MAX_NETWORKS:
        raise InvalidInput(field, f"A key allows at most {MAX_NETWORKS} networks.")
    return cleaned


def clean_rate_limit(value: Any, field: str = "rateLimitPerMinute") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, f"{field} must be a whole number or null.")
    if not RATE_LIMIT_MIN <= value <= RATE_LIMIT_MAX:
        raise InvalidInput(
            field, f"{field} must be from {RATE_LIMIT_MIN} to {RATE_LIMIT_MAX:,} a minute."
        )
    return value


def clean_ids(value: Any, group: str) -> tuple[int, ...] | None:
    """A group's chosen ids (sorted, no repeats), or None for all of the group."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 < i < 2**63 for i in value
    ):
        raise InvalidInput(group, f"{group} must be a list of ids, or null for all {group}.")
    if len(value) > MAX_CHOSEN:
        raise InvalidInput(group, f"A key can be limited to at most {MAX_CHOSEN} {group}.")
    return tuple(sorted(set(value)))


RESTRICTION_FIELDS = (*RESOURCE_GROUPS, "networks", "rateLimitPerMinute")


def clean_restriction_changes(value: Any, field: str = "restrictions") -> dict[str, Any]:
    """The restrictions an API body names, cleaned, as Restrictions field values; fields left
    out are left out (so narrowing changes only what it names)."""
    if not isinstance(value, dict):
        raise InvalidInput(field, "restrictions must be an object.")
    unknown = [name for name in value if name not in RESTRICTION_FIELDS]
    if unknown:
        raise InvalidInput(unknown[0], f"{unknown[0]} is not a known restriction.")
    changes: dict[str, Any] = {
        group: clean_ids(value[group], group) for group in RESOURCE_GROUPS if group in value
    }
    if "networks" in value:
        changes["networks"] = clean_networks(value["networks"])
    if "rateLimitPerMinute" in value:
        changes["rate_limit_per_minute"] = clean_rate_limit(value["rateLimitPerMinute"])
    return changes
