from django.core.management.base import BaseCommand

from apps.api_keys.services import api_key_send_expiry_notices


class Command(BaseCommand):
    help = "E-mail key owners 7 days and 1 day before their keys expire (run daily; idempotent)."

    def handle(self, *args, **options) -> None:
        sent = api_key_send_expiry_notices()
        self.stdout.write(f"Sent {sent} expiry notice{'s' if sent != 1 else ''}.")
