"""The restriction controls of the create form and of a key's narrow form, without JavaScript:
per group "All" or "Only these" with a checkbox per object (a search box filters the list when
scripts run), the allowed networks one per line, and the key's own rate limit."""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.conf import settings
from django.http import QueryDict

from apps.api_keys.choosable import CHOOSABLE, choosable_objects, ids_named
from apps.api_keys.restrictions import (
    NOUNS,
    RESOURCE_GROUPS,
    Restrictions,
    clean_networks,
    clean_rate_limit,
)
from apps.common.validation import InvalidInput

# More than this many objects in a group are not listed in full; the search box narrows them.
LISTED_MAX = 500


@dataclass(frozen=True)
class GroupChoice:
    group: str
    label: str  # "Communities"
    mode: str  # "all" or "selected"
    options: list[tuple[int, str, bool]]  # (id, name, checked)
    offer_all: bool  # narrowing a limited group cannot go back to all


class RestrictionInputs:
    """The controls for `current` restrictions (a new key: none), read back from `data`.

    Narrowing (`narrowing=True`) offers only what keeps the key as tight or tighter: a limited
    group lists only its chosen objects and has no "All"; the server checks it again anyway.
    """

    def __init__(
        self,
        data: QueryDict | None,
        *,
        workspace_id: UUID,
        member_id: int | None,
        current: Restrictions | None = None,
        narrowing: bool = False,
    ) -> None:
        self.data = data
        self.current = current or Restrictions()
        self.narrowing = narrowing
        self.workspace_id = workspace_id
        self.member_id = member_id
        groups = ("communities",) if member_id is not None else RESOURCE_GROUPS
        self.groups = [g for g in groups if g in CHOOSABLE]
        self.error: str | None = None
        self.error_field = ""  # which control the error is about: shown beside it

    @property
    def any_set(self) -> bool:
        """Whether a restriction is asked for (the create form then shows them opened)."""
        if self.data is None:
            return not self.current.is_empty
        return any(self.data.get(f"limit_{g}") == "selected" for g in self.groups) or bool(
            self.data.get("networks", "").strip() or self.data.get("rate_limit", "").strip()
        )

    def group_choices(self) -> list[GroupChoice]:
        choices = []
        for group in self.groups:
            chosen = self.current.chosen[group]
            objects = choosable_objects(group, self.workspace_id, self.member_id)
            if self.narrowing and chosen is not None:
                objects = objects.filter(pk__in=chosen)
            mode = self._value(f"limit_{group}", "all" if chosen is None else "selected")
            ticked = set(self._ids(group) if self.data is not None else chosen or ())
            choices.append(
                GroupChoice(
                    group=group,
                    label=group.capitalize(),
                    mode=mode,
                    options=[(o.pk, str(o), o.pk in ticked) for o in objects[:LISTED_MAX]],
                    offer_all=not (self.narrowing and chosen is not None),
                )
            )
        return choices

    @property
    def networks_text(self) -> str:
        return self._value("networks", "\n".join(self.current.networks))

    @property
    def rate_limit_text(self) -> str:
        current = self.current.rate_limit_per_minute
        return self._value("rate_limit", "" if current is None else str(current))

    @property
    def default_rate_limit(self) -> int:
        return int(settings.API_RATE_LIMIT_PER_MINUTE)

    def _value(self, name: str, default: str) -> str:
        if self.data is None:
            return default
        return str(self.data.get(name, default))

    def _ids(self, group: str) -> list[int]:
        return ids_named(self.data.getlist(f"chosen_{group}")) if self.data is not None else []

    def clean(self) -> Restrictions | None:
        """The restrictions the form asks for, or None with `error` set."""
        try:
            return self._clean()
        except InvalidInput as error:
            self.error = error.message
            self.error_field = error.field
            return None

    @property
    def error_at(self) -> str:
        """Where the error goes on the page: "networks", "rate", a group, or "top"."""
        if not self.error:
            return ""
        if self.error_field.startswith("networks"):
            return "networks"
        if self.error_field in ("rate_limit", "rateLimitPerMinute", "rate_limit_per_minute"):
            return "rate"
        return self.error_field if self.error_field in self.groups else "top"

    def _clean(self) -> Restrictions:
        changes: dict[str, Any] = {}
        for group in self.groups:
            selected = self._value(f"limit_{group}", "all") == "selected"
            if not selected and self.narrowing and self.current.chosen[group] is not None:
                selected = True  # "All" was not offered: keep the key limited
            ticked = self._ids(group)
            if not selected and ticked:
                # Never a silent choice between "All" and the boxes ticked below it.
                count = f"{len(ticked)} {group if len(ticked) > 1 else NOUNS[group]}"
                raise InvalidInput(
                    group,
                    f"You ticked {count} under “All {group}”: choose “Only these” to limit "
                    f"the key to them, or untick them to allow all {group}.",
                )
            changes[group] = tuple(sorted(set(ticked))) if selected else None
        lines = self._value("networks", "").replace(",", "\n").splitlines()
        changes["networks"] = clean_networks([line for line in lines if line.strip()])
        rate = self._value("rate_limit", "").strip()
        if rate and not (rate.isascii() and rate.isdigit() and len(rate) <= 9):
            raise InvalidInput("rate_limit", "The rate limit must be a whole number a minute.")
        changes["rate_limit_per_minute"] = clean_rate_limit(int(rate) if rate else None)
        return self.current.updated(changes) if self.narrowing else Restrictions(**changes)
