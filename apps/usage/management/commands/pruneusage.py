from typing import Any

from django.core.management.base import BaseCommand

from apps.usage.services import usage_prune, usage_roll_up


class Command(BaseCommand):
    help = (
        "Delete usage rows past their keeping time (hours 90 days, days 13 months), then roll "
        "finished days into daily rows; daily."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        pruned = usage_prune()
        self.stdout.write(
            f"Deleted {pruned.hours} hourly and {pruned.days} daily usage rows, "
            f"and {pruned.networks} networks not seen for 13 months."
        )
        rolled = usage_roll_up()
        self.stdout.write(f"Rolled up {len(rolled)} finished days into daily usage rows.")
