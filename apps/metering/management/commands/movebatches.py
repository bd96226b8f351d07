from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.metering.buffer import batches_move_all


class Command(BaseCommand):
    help = (
        "Move what waits in Redis to PostgreSQL now: the usage counts and the request log, and "
        "every batch a stopped mover left behind. App processes and the minute jobs do this on "
        "their own; this is for an operator who wants it done before, say, stopping Redis."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.REDIS_URL:
            raise CommandError("REDIS_URL is not set: nothing waits in Redis to be moved.")
        for name, written in batches_move_all().items():
            self.stdout.write(f"Moved {written} {name}.")
