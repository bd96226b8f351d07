"""The objects a key's writes created or changed, named and linked for its blast radius: a
request log row keeps only the operation and the object's id ("create_page", "57")."""

from typing import Any
from uuid import UUID

from django.urls import NoReverseMatch, reverse

from apps.api_keys.choosable import CHOOSABLE
from apps.api_keys.models import ApiKey

# The dashboard's page of an object, by the noun of its operation (a page or a product has none).
PAGES = {"key": "key_pages:detail", "community": "communities:detail"}


def _noun(operation: str) -> str:
    """ "mcp:create_page" → "page"."""
    return operation.removeprefix("mcp:").partition("_")[2]


def _names(workspace_id: UUID, noun: str, ids: set[int]) -> dict[int, str] | None:
    """Each object's name by id (one gone is left out); None for a kind without names."""
    if noun == "key":
        keys = ApiKey.objects.filter(workspace_id=workspace_id, pk__in=ids)
        return {key.pk: f"{key.name} ({key.hint})" for key in keys}
    group = next((g for g in CHOOSABLE.values() if g.noun == noun), None)
    if group is None:
        return None
    return {o.pk: str(o) for o in group.objects(workspace_id, None).filter(pk__in=ids)}


def objects_named(workspace_id: UUID, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` (operation, object_id, ...) each with its `noun`, the object's `name` ("" once
    deleted, or for a kind without names), whether it is `deleted`, and the `url` of its page
    ("" when it has none)."""
    wanted: dict[str, set[int]] = {}
    for row in rows:
        if str(row["object_id"]).isdigit():
            wanted.setdefault(_noun(row["operation"]), set()).add(int(row["object_id"]))
    names = {noun: _names(workspace_id, noun, ids) for noun, ids in wanted.items()}
    named = []
    for row in rows:
        noun = _noun(row["operation"])
        object_id = int(row["object_id"]) if str(row["object_id"]).isdigit() else None
        known = names.get(noun)
        name = known.get(object_id, "") if known is not None and object_id is not None else ""
        url = ""
        if name and noun in PAGES:
            try:
                url = reverse(PAGES[noun], args=[object_id])
            except NoReverseMatch:
                url = ""
        deleted = known is not None and not name
        named.append(
            {**row, "noun": noun or "object", "name": name, "url": url, "deleted": deleted}
        )
    return named
