"""Django's `migrate`, waiting for the database's answers as long as they take: an index built
on a large table may take longer than a request's bound (apps/common/postgresql)."""

from typing import Any

from django.core.management.commands import migrate

from apps.common.postgresql.base import unbounded_waits


class Command(migrate.Command):
    def handle(self, *args: Any, **options: Any) -> None:
        with unbounded_waits():
            super().handle(*args, **options)
