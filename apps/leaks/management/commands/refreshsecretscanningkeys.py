import urllib.error
import urllib.request
from datetime import UTC
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from apps.common.dates import moment_text
from apps.leaks.models import SecretScanningKeySet
from apps.leaks.reports import parse_public_keys

GITHUB_KEYS_URL = "https://api.github.com/meta/public_keys/secret_scanning"
MAX_BYTES = 256 * 1024


class Command(BaseCommand):
    help = (
        "Fetch GitHub's secret-scanning public keys and keep them for leak reports. When the "
        "network or GitHub fails, or the answer is malformed, the last good set stays in use."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default=GITHUB_KEYS_URL, help="where to fetch the keys")
        parser.add_argument("--timeout", type=float, default=10.0, help="seconds")

    def handle(self, *args: Any, url: str, timeout: float, **options: Any) -> None:
        if not url.startswith(("https://", "http://")):
            raise CommandError("--url must be an http(s) address.")
        request = urllib.request.Request(  # noqa: S310 - the scheme is checked above
            url, headers={"Accept": "application/json", "User-Agent": "Gatehouse"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
                body = answer.read(MAX_BYTES + 1).decode()
        except (urllib.error.URLError, OSError, UnicodeDecodeError) as error:
            raise CommandError(self._kept(f"Could not fetch {url} ({error})")) from None
        if len(body) > MAX_BYTES:
            raise CommandError(self._kept(f"{url} answered more than {MAX_BYTES} bytes"))
        try:
            keys = parse_public_keys(body)
        except ValueError as error:
            raise CommandError(
                self._kept(f"{url} answered a malformed key list: {error}")
            ) from None
        if not keys:
            raise CommandError(self._kept(f"{url} answered no keys"))
        SecretScanningKeySet.objects.update_or_create(
            pk=1, defaults={"body": body, "fetched_at": timezone.now()}
        )
        current = sorted(k.identifier for k in keys.values() if k.is_current)
        self.stdout.write(
            f"Stored {len(keys)} secret-scanning public keys ({len(current)} current)."
        )

    @staticmethod
    def _kept(reason: str) -> str:
        stored = SecretScanningKeySet.objects.first()
        if stored is None:
            return f"{reason}; no keys were stored before."
        return f"{reason}; keeping the set fetched {moment_text(stored.fetched_at, UTC)}."
