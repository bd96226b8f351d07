"""How long a key's page takes on the server with a full history of usage rows.

    .venv/bin/python bench/key_page.py [--requests 50]     # needs PostgreSQL

Fills a fresh PostgreSQL database with one key's 13 months of daily rows and 90 days of hourly
rows (six outcomes, three operations each: 7,128 daily and 38,880 hourly rows), with 200 other
keys' rows beside them, then times GET of the key's page and of the Usage page in-process
(Django's test client, signed in as the owner, DEBUG off), and prints the median and the worst.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATABASE = "gatehouse_key_page"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", DATABASE])
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DATABASE], check=True)
    os.environ.update(
        DATABASE_URL=f"postgres://postgres@/{DATABASE}?host=/var/run/postgresql",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = ["testserver"]
    call_command("migrate", verbosity=0)
    key, owner = _fill()
    from django.test import Client

    client = Client()
    client.force_login(owner)
    for name, path in (("key page", f"/integrations/api/keys/{key.pk}/"), ("Usage", "/usage/")):
        assert client.get(path).status_code == 200
        times = []
        for _ in range(args.requests):
            start = time.perf_counter()
            client.get(path)
            times.append((time.perf_counter() - start) * 1000)
        print(f"{name}: median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms")
    return 0


def _fill():
    from datetime import timedelta

    from django.utils import timezone

    from apps.api_keys.services import api_key_create
    from apps.usage.models import KeyUsageDay, KeyUsageHour
    from tests.factories import owner_of

    owner = owner_of()
    workspace = owner.memberships.get().workspace
    keys = [
        api_key_create(
            workspace=workspace,
            user=owner,
            name=f"K{n}",
            scopes=["pages:read"],
            expires_at=None
            if workspace.key_allow_no_expiry
            else timezone.now() + timedelta(days=300),
        ).key
        for n in range(201)
    ]
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    outcomes = ("2xx", "4xx", "5xx", "401", "403", "429")
    operations = ("list_pages", "get_workspace", "mcp:get_workspace")
    days = [
        KeyUsageDay(
            key=key, day=(now - timedelta(days=d)).date(), operation=o, outcome=r, count=d + 1
        )
        for key in keys[:1]
        for d in range(396)
        for o in operations
        for r in outcomes
    ] + [
        KeyUsageDay(
            key=key,
            day=(now - timedelta(days=d)).date(),
            operation="list_pages",
            outcome="2xx",
            count=5,
        )
        for key in keys[1:]
        for d in range(30)
    ]
    hours = [
        KeyUsageHour(
            key=keys[0], hour=now - timedelta(hours=h), operation=o, outcome=r, count=h + 1
        )
        for h in range(90 * 24)
        for o in operations
        for r in outcomes
    ]
    KeyUsageDay.objects.bulk_create(days, batch_size=5000)
    KeyUsageHour.objects.bulk_create(hours, batch_size=5000)
    print(f"{KeyUsageDay.objects.count()} daily and {KeyUsageHour.objects.count()} hourly rows")
    return keys[0], owner


if __name__ == "__main__":
    sys.exit(main())
