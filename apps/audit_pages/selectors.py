from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.db.models import QuerySet
from django.http import QueryDict

from apps.audit.actions import action_choices
from apps.audit.models import AuditEvent
from apps.common.dates import parse_day_text
from apps.common.validation import parse_id
from apps.workspaces.models import Workspace


@dataclass(frozen=True)
class AuditFilters:
    """The Audit page's filters, read from a query string.

    Values that cannot be right (an unknown action, an id that is not a plain positive number)
    are dropped and named in `ignored`, so the page can say so instead of failing.
    """

    action: str = ""
    actor: str = ""  # "user:<id>", "key:<id>" or "operator"
    key: str = ""  # a key id
    since: str = ""  # a date (YYYY-MM-DD), from its start in the workspace's time zone
    until: str = ""  # a date, to its end
    ignored: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, query: QueryDict) -> "AuditFilters":
        action = query.get("action", "")
        actor = query.get("actor", "")
        key = query.get("key", "")
        since, until = query.get("since", ""), query.get("until", "")
        kind, _, ident = actor.partition(":")
        valid = {
            "action": not action or action in dict(action_choices()),
            "actor": not actor
            or actor == "operator"
            or (kind in ("user", "key") and parse_id(ident) is not None),
            "key": not key or parse_id(key) is not None,
            "from date": not since or _date(since) is not None,
            "to date": not until or _date(until) is not None,
        }
        first, last = _date(since), _date(until)
        if first and last and first > last:
            valid["to date"] = False  # a range that ends before it starts
        return cls(
            action=action if valid["action"] else "",
            actor=actor if valid["actor"] else "",
            key=key if valid["key"] else "",
            since=since if valid["from date"] else "",
            until=until if valid["to date"] else "",
            ignored=tuple(name for name, ok in valid.items() if not ok),
        )

    def as_query(self) -> str:
        return urlencode({k: v for k, v in vars(self).items() if v and k != "ignored"})


def _date(value: str) -> date | None:
    """As the page's fields write a day ("Nov 26, 2026") or as ISO 8601."""
    return parse_day_text(value)


def _day(value: str) -> date:
    day = _date(value)
    assert day is not None  # from_query keeps only days it can read
    return day


def audit_events(workspace: Workspace, filters: AuditFilters) -> QuerySet[AuditEvent]:
    """The workspace's events, newest first, filtered; never another workspace's. Dates are
    days in the workspace's time zone."""
    events = AuditEvent.objects.filter(workspace=workspace).select_related("key")
    zone = ZoneInfo(workspace.timezone)
    if filters.since:
        start = datetime.combine(_day(filters.since), time.min, zone)
        events = events.filter(created_at__gte=start)
    if filters.until:
        next_day = _day(filters.until) + timedelta(days=1)
        end = datetime.combine(next_day, time.min, zone)
        events = events.filter(created_at__lt=end)
    if filters.action:
        events = events.filter(action=filters.action)
    if filters.actor == "operator":
        events = events.filter(actor_user__isnull=True, actor_key__isnull=True)
    elif filters.actor:
        kind, _, ident = filters.actor.partition(":")
        if kind == "user":
            events = events.filter(actor_user_id=int(ident), actor_key__isnull=True)
        else:
            events = events.filter(actor_key_id=int(ident))
    if filters.key:
        events = events.filter(key_id=int(filters.key))
    return events


MENU_EVENTS = 5000


def audit_filter_choices(workspace: Workspace) -> dict[str, list[tuple[str, str]]]:
    """The actors and keys that appear among the workspace's latest 5,000 events, for the
    filter menus (an older one is still reached by its link, `?actor=user:7`)."""
    # Among the latest events (an index walk) and in one read, not DISTINCT over the whole
    # log: the menus are read on every view of the page, and a log that keeps every sign-in
    # grows by the hundred thousand (1.7 s for 300,000 events, when the model's ordering
    # joined the DISTINCT).
    latest = AuditEvent.objects.filter(workspace=workspace).order_by("-created_at", "-id")
    actors: dict[str, str] = {}
    keys: dict[str, str] = {}
    for user_id, actor_key_id, label, key_id, subject in latest.values_list(
        "actor_user_id", "actor_key_id", "actor_label", "key_id", "subject"
    )[:MENU_EVENTS]:
        if actor_key_id:
            actors.setdefault(f"key:{actor_key_id}", label)
        elif user_id:
            actors.setdefault(f"user:{user_id}", label)
        else:
            actors["operator"] = (
                "No account: operators, GitHub, the identity provider, failed sign-ins"
            )
        if key_id:
            keys.setdefault(str(key_id), subject)
    return {
        "actors": sorted(actors.items(), key=lambda item: item[1]),
        "keys": sorted(keys.items(), key=lambda item: item[1]),
    }
