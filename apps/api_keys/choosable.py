"""The objects a key can be limited to, group by group, as the apps that own them declare.

Communities, pages and products live in apps above this one, so each registers its group here
when it starts (`register_choosable` in its AppConfig.ready): how to find the objects a key of a
workspace (or of one member) may choose, and how to name one. A deleted object drops out of
every key's chosen set by the same registration; a set never turns into "all" by emptying.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import transaction
from django.db.models import Model, QuerySet
from django.db.models.signals import post_delete
from django.utils import timezone

from apps.common.validation import InvalidInput

from .models import RESTRICTED_FIELD, ApiKey
from .restrictions import Restrictions
from .verification import api_key_note_object_use


@dataclass(frozen=True)
class ChoosableGroup:
    group: str  # as the API names it: "communities"
    model: str  # the model's label: "communities.Community"
    # (workspace id, member's user id or None) → the objects a key there may be limited to
    objects: Callable[[UUID, int | None], QuerySet[Any]]
    noun: str  # "community"


CHOOSABLE: dict[str, ChoosableGroup] = {}


def register_choosable(group: ChoosableGroup) -> None:
    """Declare a restrictable group; its objects' deletion drops them from keys' sets."""
    if group.group not in RESTRICTED_FIELD:
        raise ValueError(f"{group.group!r} is not a group keys can be limited in.")
    CHOOSABLE[group.group] = group

    def forget(sender: type[Model], instance: Any, **kwargs: Any) -> None:
        _forget_deleted(group.group, instance.workspace_id, instance.pk)

    post_delete.connect(forget, sender=group.model, weak=False, dispatch_uid=f"choosable-{group}")


def _forget_deleted(group: str, workspace_id: UUID, object_id: int) -> None:
    field = RESTRICTED_FIELD[group]
    with transaction.atomic():
        keys = ApiKey.objects.select_for_update(no_key=True).filter(
            workspace_id=workspace_id, **{f"{field}__isnull": False}
        )
        for key in keys.only("pk", field):
            ids = key.chosen(group) or []
            if object_id in ids:
                ApiKey.objects.filter(pk=key.pk).update(
                    **{field: [i for i in ids if i != object_id]}
                )


def choosable_objects(
    group: str, workspace_id: UUID, member_id: int | None = None
) -> QuerySet[Any]:
    """The objects of `group` a key of this workspace (a member key: of this member) may be
    limited to."""
    return CHOOSABLE[group].objects(workspace_id, member_id)


def check_chosen_exist(
    restrictions: Restrictions, *, workspace_id: UUID, member_id: int | None
) -> None:
    """InvalidInput naming the first chosen id that is not an object the key could reach."""
    for group, ids in restrictions.chosen.items():
        if ids is None:
            continue
        if member_id is not None and group != "communities":
            raise InvalidInput(group, f"Member keys reach communities only, not {group}.")
        found = set(
            choosable_objects(group, workspace_id, member_id)
            .filter(pk__in=ids)
            .values_list("pk", flat=True)
        )
        missing = [i for i in ids if i not in found]
        if missing:
            noun = CHOOSABLE[group].noun
            where = "of this member" if member_id is not None else "in this workspace"
            raise InvalidInput(group, f"There is no {noun} {missing[0]} {where}.")


def limited_to_key(objects: QuerySet[Any], key: ApiKey, group: str) -> QuerySet[Any]:
    """`objects` as far as the key is limited in `group` (unchanged when it is not)."""
    ids = key.chosen(group)
    return objects if ids is None else objects.filter(pk__in=ids)


def note_reached(key: ApiKey, group: str, ids: list[int]) -> None:
    """Stamp the chosen objects a request reached (at most once a minute each), so the key's
    page can point out a chosen object nobody uses; nothing for a key not limited in `group`."""
    if ids and key.chosen(group) is not None:
        api_key_note_object_use(key, [f"{group}:{i}" for i in ids], now=timezone.now())


def chosen_names(key: ApiKey) -> dict[str, list[tuple[int, str]]]:
    """Per limited group, the chosen objects as (id, name), for pages and audit."""
    names = {}
    for group, ids in key.restrictions.chosen.items():
        if ids is None or group not in CHOOSABLE:
            continue
        objects = choosable_objects(group, key.workspace_id).filter(pk__in=ids)
        names[group] = [(obj.pk, str(obj)) for obj in objects]
    return names


def ids_named(values: Iterable[str]) -> list[int]:
    """Form values to ids, skipping anything that is not one."""
    return [int(v) for v in values if v.isascii() and v.isdigit() and len(v) <= 18]
