import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.api_keys.notices import api_key_send_expiry_notices


class Command(BaseCommand):
    help = (
        "E-mail key holders 7 days and 1 day before their keys expire, with a link to re-create "
        "the key. Run it daily (cron or a scheduler); it is idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--every",
            type=int,
            metavar="SECONDS",
            help="keep running and send again every SECONDS (what `dev.py run` does)",
        )

    def handle(self, *args: Any, every: int | None = None, **options: Any) -> None:
        if every is not None and every < 60:
            raise CommandError("--every must be at least 60 seconds.")
        while True:
            sent = api_key_send_expiry_notices()
            self.stdout.write(f"Sent {sent} expiry notice{'s' if sent != 1 else ''}.")
            if every is None:
                return
            time.sleep(every)
