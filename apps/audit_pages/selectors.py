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


def audit_filter_choices(workspace: Workspace) -> dict[str, list[tuple[str, str]]]:
    """The actors and keys that appear in the workspace's log, for the filter menus."""
    base = AuditEvent.objects.filter(workspace=workspace)
    actors: dict[str, str] = {}
    for user_id, key_id, label in base.values_list(
        "actor_user_id", "actor_key_id", "actor_label"
    ).distinct():
        if key_id:
            actors[f"key:{key_id}"] = label
        elif user_id:
            actors[f"user:{user_id}"] = label
        else:
            actors["operator"] = "No account: operators, GitHub, failed sign-ins"
    keys = {
        str(key_id): subject
        for key_id, subject in base.filter(key__isnull=False)
        .values_list("key_id", "subject")
        .distinct()
    }
    return {
        "actors": sorted(actors.items(), key=lambda item: item[1]),
        "keys": sorted(keys.items(), key=lambda item: item[1]),
    }
