"""The key inventory's filters, read from a query string and applied to a queryset."""

from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q, QuerySet
from django.http import QueryDict
from django.utils import timezone

from apps.api_keys.models import UNUSED_AFTER, ApiKey, ApiKeyQuerySet, ApiKeyState
from apps.api_keys.states import idle_condition
from apps.common.validation import parse_id
from apps.idle_keys.notices import warned_condition
from apps.quotas.uses import key_quota_uses

# The list opens on the keys that work or wait for approval (every CLI re-login leaves a
# revoked row behind); each state on its own, or all of them.
DEFAULT_STATE = "current"
STATE_LABELS = {
    DEFAULT_STATE: "Active and waiting",
    ApiKeyState.ACTIVE: "Active",
    ApiKeyState.PENDING: "Waiting for approval",
    ApiKeyState.SUSPENDED: "Suspended (identity provider)",
    ApiKeyState.DENIED: "Denied",
    ApiKeyState.EXPIRED: "Expired",
    ApiKeyState.REVOKED: "Revoked",
    "all": "All states",
}
STATES = tuple(STATE_LABELS)
KINDS = {
    "all": "All kinds",
    "workspace": "Workspace",
    "member": "Member",
    "cli": "CLI",
    "mcp": "MCP (connected apps)",
    "service": "Service account",
}
# "Idle N days" filters the list offers (any whole number in the query works too).
IDLE_CHOICES = (30, 90)
EXPIRING_WITHIN = timedelta(days=7)
SEARCH_MAX_LENGTH = 100


@dataclass(frozen=True)
class KeyFilters:
    """What the key list shows: every value validated, anything else dropped (and named)."""

    state: str = DEFAULT_STATE
    kind: str = "all"
    holder: str = ""  # a user id
    q: str = ""
    unused: bool = False  # with a permission unused for 30 days: the list's flag, exactly
    no_expiry: bool = False
    expiring: bool = False  # active and expiring within 7 days
    idle: int = 0  # unused (or, never used, created) this many days ago or more
    idle_warned: bool = False  # warned: revoked within 7 days as idle unless used (§13)
    write_unrestricted: bool = False  # a write scope, limited to no object and no network
    quota_high: bool = False  # active, past 80 % of its quota this period
    ignored: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, query: QueryDict) -> "KeyFilters":
        state, kind = query.get("state", DEFAULT_STATE), query.get("kind", "all")
        holder, q = query.get("holder", ""), query.get("q", "").strip()
        idle = query.get("idle", "")
        valid = {
            "state": state in STATES,
            "kind": kind in KINDS,
            "holder": not holder or parse_id(holder) is not None,
            "q": len(q) <= SEARCH_MAX_LENGTH and q.isprintable(),
            "idle": not idle or (idle.isascii() and idle.isdigit() and 1 <= int(idle) <= 3650),
        }
        return cls(
            state=state if valid["state"] else DEFAULT_STATE,
            kind=kind if valid["kind"] else "all",
            holder=holder if valid["holder"] else "",
            q=q if valid["q"] else "",
            unused=query.get("unused") == "1",
            no_expiry=query.get("no_expiry") == "1",
            expiring=query.get("expiring") == "1",
            idle=int(idle) if idle and valid["idle"] else 0,
            idle_warned=query.get("idle_warned") == "1",
            write_unrestricted=query.get("write_unrestricted") == "1",
            quota_high=query.get("quota_high") == "1",
            ignored=tuple(name for name, ok in valid.items() if not ok),
        )

    def as_query(self, **changes: Any) -> str:
        """The query string of these filters (with `changes`), defaults left out."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "ignored"}
        values.update(changes)
        defaults = {"state": DEFAULT_STATE, "kind": "all"}
        return urlencode(
            {
                name: "1" if value is True else value
                for name, value in values.items()
                if value and value != defaults.get(name)
            }
        )

    @property
    def active(self) -> bool:
        return bool(self.as_query())

    def apply(self, keys: ApiKeyQuerySet, now: datetime | None = None) -> ApiKeyQuerySet:
        now = now or timezone.now()
        if self.state == DEFAULT_STATE:
            keys = keys.current(now)
        elif self.state != "all":
            keys = keys.in_state(self.state, now)
        if self.kind == "cli":
            keys = keys.filter(tag=ApiKey.Tag.CLI)
        elif self.kind == "mcp":
            keys = keys.filter(tag=ApiKey.Tag.MCP)
        elif self.kind == "member":
            keys = keys.filter(kind=ApiKey.Kind.MEMBER)
        elif self.kind == "workspace":
            keys = keys.filter(kind=ApiKey.Kind.WORKSPACE, tag=ApiKey.Tag.NONE)
        elif self.kind == "service":
            keys = keys.filter(user__is_service_account=True)
        if self.holder:
            keys = keys.filter(user_id=int(self.holder))
        if self.q:
            keys = keys.filter(Q(name__icontains=self.q) | Q(hint__icontains=self.q))
        if self.unused:
            # One definition with the list's "unused for 30 days" flag: ApiKey.unused_scopes_at
            # over the per-scope stamps, which SQL cannot read portably from the JSON column.
            old = (
                keys.select_related(None)
                .filter(created_at__lte=now - UNUSED_AFTER)
                .only("pk", "created_at", "scopes", "scope_last_used")
            )
            keys = keys.filter(pk__in=[key.pk for key in old if key.unused_scopes_at(now)])
        if self.no_expiry:
            keys = keys.filter(expires_at__isnull=True)
        if self.idle:
            keys = keys.in_state(ApiKeyState.ACTIVE, now).filter(idle_condition(self.idle, now))
        if self.idle_warned:
            keys = keys.in_state(ApiKeyState.ACTIVE, now).filter(warned_condition())
        if self.write_unrestricted:
            candidates = keys.select_related(None).only("pk", *UNRESTRICTED_FIELDS)
            keys = keys.filter(pk__in=[key.pk for key in candidates if _writes_unrestricted(key)])
        if self.expiring:
            # A connected app's key renews itself an hour at a time: never "expiring" (§13).
            keys = (
                keys.in_state(ApiKeyState.ACTIVE, now)
                .filter(expires_at__lte=now + EXPIRING_WITHIN)
                .exclude(tag=ApiKey.Tag.MCP)
            )
        if self.quota_high:
            with_quota = list(
                keys.in_state(ApiKeyState.ACTIVE, now)
                .filter(quota_requests__isnull=False)
                .select_related(None)
                .select_related("user")
                .only(
                    "pk",
                    "created_at",
                    "quota_requests",
                    "quota_period",
                    "quota_shared",
                    "user__date_joined",
                )
            )
            uses = key_quota_uses(with_quota)
            keys = keys.filter(pk__in=[pk for pk, use in uses.items() if use.percent >= 80])
        return keys


# What "no restriction" reads on a key: every object of every group, any network.
UNRESTRICTED_FIELDS = (
    "scopes",
    "community_ids",
    "page_ids",
    "product_ids",
    "allowed_networks",
    "rate_limit_per_minute",
)


def _writes_unrestricted(key: ApiKey) -> bool:
    """A key that can change things (a :write scope) with no object and no network limit."""
    restrictions = key.restrictions
    return (
        any(scope.endswith(":write") for scope in key.scopes)
        and all(ids is None for ids in restrictions.chosen.values())
        and not restrictions.networks
    )


def holders(keys: QuerySet[ApiKey]) -> list[tuple[str, str]]:
    """The people who hold keys in `keys`, for the holder filter."""
    rows = (
        keys.order_by()
        .values_list("user_id", "user__email", "user__is_service_account", "user__full_name")
        .distinct()
    )
    labelled = [
        (str(user_id), f"Service account: {name}" if service else email)
        for user_id, email, service, name in rows
    ]
    return sorted(labelled, key=lambda row: row[1])
