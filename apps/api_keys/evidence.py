"""What a key's use says about the powers it holds: the scopes and chosen objects it has not
exercised for 30 days (least privilege: the evidence for narrowing it)."""

from datetime import datetime, timedelta

from django.utils import timezone

from .states import ApiKeyState

# A scope not exercised for this long counts as unused.
UNUSED_AFTER = timedelta(days=30)
RESTRICTED_FIELD = {"communities": "community_ids", "pages": "page_ids", "products": "product_ids"}


class UseEvidence:
    """Read from the key's stamps (`scope_last_used`, `object_last_used`); mixed into ApiKey."""

    created_at: datetime
    scopes: list[str]
    scope_last_used: dict[str, str]
    object_last_used: dict[str, str]

    @property
    def state(self) -> str:
        raise NotImplementedError

    def chosen(self, group: str) -> list[int] | None:
        """The ids of `group` this key is limited to, or None for all of the group."""
        return getattr(self, RESTRICTED_FIELD[group])

    def object_used_at(self, group: str, object_id: int) -> datetime | None:
        stamp = (self.object_last_used or {}).get(f"{group}:{object_id}")
        return datetime.fromisoformat(stamp) if stamp else None

    def unused_objects_at(self, now: datetime) -> dict[str, list[int]]:
        """Per limited group, the chosen ids not reached for 30 days (keys 30 days old or more)."""
        if now - self.created_at < UNUSED_AFTER:
            return {}
        unused = {}
        for group in RESTRICTED_FIELD:
            ids = [
                object_id
                for object_id in self.chosen(group) or ()
                if (used := self.object_used_at(group, object_id)) is None
                or now - used >= UNUSED_AFTER
            ]
            if ids:
                unused[group] = ids
        return unused

    def scope_used_at(self, scope: str) -> datetime | None:
        stamp = (self.scope_last_used or {}).get(scope)
        return datetime.fromisoformat(stamp) if stamp else None

    def unused_scopes_at(self, now: datetime) -> list[str]:
        """The scopes of a key at least 30 days old that it has not exercised for 30 days."""
        if now - self.created_at < UNUSED_AFTER:
            return []
        return [
            scope
            for scope in self.scopes
            if (used := self.scope_used_at(scope)) is None or now - used >= UNUSED_AFTER
        ]

    @property
    def unused_objects(self) -> dict[str, list[int]]:
        active = self.state == ApiKeyState.ACTIVE
        return self.unused_objects_at(timezone.now()) if active else {}

    @property
    def unused_scopes(self) -> list[str]:
        active = self.state == ApiKeyState.ACTIVE
        return self.unused_scopes_at(timezone.now()) if active else []

    @property
    def scope_usage(self) -> list[tuple[str, datetime | None]]:
        return [(scope, self.scope_used_at(scope)) for scope in self.scopes]
