from typing import Any

from django.core.management.base import BaseCommand

from apps.key_expiry.notices import api_key_announce_expired, api_key_send_expiry_notices


class Command(BaseCommand):
    help = (
        "Queue now what the hourly job `expiry-notices` does: the e-mails and `key.expiring` "
        "events of keys expiring within 7 days and 1 day, the `key.expired` events of keys "
        "that expired. Idempotent; a worker sends the e-mails and events."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        sent, announced = api_key_send_expiry_notices(), api_key_announce_expired()
        self.stdout.write(
            f"Queued {sent} expiry notice{'s' if sent != 1 else ''} and {announced} "
            f"key.expired event{'s' if announced != 1 else ''}."
        )
