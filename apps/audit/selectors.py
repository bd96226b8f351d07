from dataclasses import dataclass
from urllib.parse import urlencode

from django.db.models import QuerySet

from apps.common.validation import parse_id
from apps.workspaces.models import Workspace

from .models import Action, AuditEvent


@dataclass(frozen=True)
class AuditFilters:
    """The Audit page's filters, read from a query string.

    Values that cannot be right (an unknown action, an id that is not a plain positive number)
    are dropped and named in `ignored`, so the page can say so instead of failing.
    """

    action: str = ""
    actor: str = ""  # "user:<id>", "key:<id>" or "operator"
    key: str = ""  # a key id
    ignored: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, query) -> "AuditFilters":
        action = query.get("action", "")
        actor = query.get("actor", "")
        key = query.get("key", "")
        kind, _, ident = actor.partition(":")
        valid = {
            "action": not action or action in Action.values,
            "actor": not actor
            or actor == "operator"
            or (kind in ("user", "key") and parse_id(ident) is not None),
            "key": not key or parse_id(key) is not None,
        }
        return cls(
            action=action if valid["action"] else "",
            actor=actor if valid["actor"] else "",
            key=key if valid["key"] else "",
            ignored=tuple(name for name, ok in valid.items() if not ok),
        )

    def as_query(self) -> str:
        return urlencode({k: v for k, v in vars(self).items() if v and k != "ignored"})


def audit_events(workspace: Workspace, filters: AuditFilters) -> QuerySet[AuditEvent]:
    """The workspace's events, newest first, filtered; never another workspace's."""
    events = AuditEvent.objects.filter(workspace=workspace).select_related("key")
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
            actors["operator"] = "Operator (command line)"
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
