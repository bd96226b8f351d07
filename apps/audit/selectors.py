from dataclasses import dataclass

from django.db.models import QuerySet

from apps.workspaces.models import Workspace

from .models import Action, AuditEvent


@dataclass(frozen=True)
class AuditFilters:
    """The Audit page's filters, read from a query string; unknown values are ignored."""

    action: str = ""
    actor: str = ""  # "user:<id>", "key:<id>" or "operator"
    key: str = ""  # a key id

    @classmethod
    def from_query(cls, query) -> "AuditFilters":
        action = query.get("action", "")
        actor = query.get("actor", "")
        key = query.get("key", "")
        valid_actor = actor == "operator" or (
            actor.partition(":")[0] in ("user", "key") and actor.partition(":")[2].isdigit()
        )
        return cls(
            action=action if action in Action.values else "",
            actor=actor if valid_actor else "",
            key=key if key.isdigit() and len(key) < 19 else "",
        )

    def as_query(self) -> str:
        from urllib.parse import urlencode

        return urlencode({k: v for k, v in vars(self).items() if v})


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
