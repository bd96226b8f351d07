"""The request log at size: reading a key's latest page and a filtered Logs page among 10 million
rows, and how fast the flush writes. Needs PostgreSQL.

    .venv/bin/python bench/request_log.py [--rows 10000000] [--repeat 30] [--http] [--port P]

Fills a fresh PostgreSQL database (its table partitioned by day, as in production) with
`--rows` requests over the last 30 days: 20 workspaces of 50 keys, 92 % answered 2xx, 7 % 4xx,
1 % 5xx. Then, in process and warm, times the reads the pages and the API make (server time:
the query and the rows made into objects), median and worst of `--repeat` runs each:

1. a key's latest 50 requests (its page, `GET /keys/{id}/requests`);
2. the Logs page filtered by status class (4xx, and the rarer 5xx) over the last week;
3. one request found by its id among all of them;
4. the flush: 100,000 entries written by `entries_write` (one COPY), rows per second.

It also prints each read's plan (EXPLAIN ANALYZE), so a slow one says why. With `--http` it
then times the same pages as a client sees them (bench/request_log_http.py): a key's latest 50
requests over the API beside `GET /workspace`, that key's page in the dashboard, and the
signed-in Logs page, unfiltered and filtered by 5xx, through a gunicorn server on `--port` (a
free one by default), with the load average printed. `$REQUEST_LOG_BENCH_DATABASE` names the
database (dropped at the start and end).
"""

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATABASE = os.environ.get("REQUEST_LOG_BENCH_DATABASE", "gatehouse_request_log_bench")
WORKSPACES, KEYS_EACH, DAYS = 20, 50, 30


def timed(run, repeat: int) -> tuple[float, float]:
    """Median and worst of `repeat` runs, in milliseconds, after one warm-up run."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--http", action="store_true", help="also time the pages over HTTP")
    parser.add_argument("--port", type=int, default=0, help="the HTTP server's port")
    args = parser.parse_args()
    subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", DATABASE])
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", DATABASE], check=True)
    os.environ.update(
        DATABASE_URL=f"postgres://postgres@/{DATABASE}?host=/var/run/postgresql",
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="false",
        # Random: the HTTP server refuses weak secrets, as production does (config/wsgi.py).
        SECRET_KEY=secrets.token_urlsafe(48),
        API_KEY_HASH_SECRET=secrets.token_urlsafe(48),
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    from apps.api_keys.models import ApiKey
    from apps.api_keys.services import api_key_create
    from apps.metering.facts import new_request_id
    from apps.metering.records import RequestEntry
    from apps.request_log.partitions import partitions_ensure
    from apps.request_log.reading import LogFilters, requests_page
    from apps.request_log.recording import entries_write
    from apps.workspaces.models import Membership, Workspace
    from tests.factories import UserFactory

    call_command("migrate", verbosity=0)
    owner = UserFactory()
    workspaces = [Workspace.objects.create(name=f"Bench {n}") for n in range(WORKSPACES)]
    # The workspace the HTTP reads sign in to, with a key of its own (a real secret).
    reader = UserFactory()
    Membership.objects.create(workspace=workspaces[7], user=reader, role=Membership.Role.OWNER)
    reading_key = api_key_create(
        workspace=workspaces[7], user=reader, name="reader", scopes=["keys:read"], expires_at=None
    )
    keys = [
        ApiKey.objects.create(
            workspace=workspace,
            user=owner,
            name=f"key {n}",
            scopes=["pages:read"],
            secret_hash=uuid.uuid4().hex + uuid.uuid4().hex,
            hint=f"gwk_…{n:04d}",
        )
        for workspace in workspaces
        for n in range(KEYS_EACH)
    ]
    now = datetime.now(UTC)
    with transaction.atomic():
        partitions_ensure({(now - timedelta(days=d)).date() for d in range(DAYS + 1)})
    span = DAYS * 86_400
    print(f"Filling {args.rows:,} rows over {DAYS} days ...", flush=True)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        # generate_series in the server: 10 million rows without 10 million Python objects.
        cursor.execute(
            """
            INSERT INTO request_log (at, key_id, workspace_id, door, method, path, operation,
                status, error, duration_ms, client_ip, user_agent, request_id, object_id)
            SELECT now() - make_interval(secs => (g::bigint * 7919) %% %s),
                   k.id, k.workspace_id, 'api', 'GET', '/api/v1/pages', 'list_pages',
                   CASE WHEN g / 1009 %% 100 = 0 THEN 503 WHEN g / 1009 %% 100 < 8 THEN 403
                        ELSE 200 END,
                   CASE WHEN g / 1009 %% 100 = 0 THEN 'internal-error'
                        WHEN g / 1009 %% 100 < 8 THEN 'insufficient-scope' ELSE '' END,
                   2.5, '203.0.113.7', 'bench/1.0', 'req_' || lpad(to_hex(g), 24, '0'), ''
            FROM generate_series(1, %s) AS g
            JOIN (SELECT id, workspace_id, row_number() OVER (ORDER BY id) - 1 AS n
                  FROM api_keys_apikey) AS k ON k.n = g %% %s
            """,
            [span, args.rows, len(keys) + 1],
        )
        cursor.execute("ANALYZE request_log")
    print(f"  filled in {time.perf_counter() - started:.0f} s", flush=True)

    workspace, key = workspaces[7], keys[7 * KEYS_EACH + 3]
    week = now - timedelta(days=7)
    reads = {
        "a key's latest 50 requests": lambda: requests_page(
            workspace.pk, LogFilters(key_id=key.pk), limit=50
        ),
        "Logs: 4xx over the last week, first page": lambda: requests_page(
            workspace.pk, LogFilters(status="4xx", since=week)
        ),
        "Logs: 5xx over the last week, first page": lambda: requests_page(
            workspace.pk, LogFilters(status="5xx", since=week)
        ),
        "Logs: a status no request had (429), last week": lambda: requests_page(
            workspace.pk, LogFilters(status="429", since=week)
        ),
        "one request by its id": lambda: requests_page(
            workspace.pk, LogFilters(request_id="req_" + f"{7 * KEYS_EACH + 3 + 1000:x}".zfill(24))
        ),
    }
    print(f"\n| read ({args.rows:,} rows) | median ms | worst ms |\n|---|---|---|")
    for name, read in reads.items():
        median, worst = timed(read, args.repeat)
        print(f"| {name} | {median:.2f} | {worst:.2f} |", flush=True)

    entries = [
        RequestEntry(
            new_request_id(),
            now - timedelta(seconds=n % 600),
            keys[n % len(keys)].pk,
            "api",
            "GET",
            "/api/v1/pages",
            "list_pages",
            200,
            "",
            2.5,
            "203.0.113.7",
            "bench/1.0",
            "",
        )
        for n in range(100_000)
    ]
    started = time.perf_counter()
    with transaction.atomic():
        written = entries_write(entries)
    seconds = time.perf_counter() - started
    print(f"\nflush: {written:,} rows in {seconds:.2f} s = {written / seconds:,.0f} rows/s")

    if os.environ.get("BENCH_EXPLAIN", "1") == "1":
        from apps.request_log.models import RequestLogEntry

        for name, rows in {
            "key": RequestLogEntry.objects.filter(workspace_id=workspace.pk, key_id=key.pk),
            "5xx week": RequestLogEntry.objects.filter(
                workspace_id=workspace.pk, status__gte=500, status__lt=600, at__gte=week
            ),
        }.items():
            print(f"\nplan, {name}:")
            print(rows.order_by("-at", "-id")[:51].explain(analyze=True))
    if args.http:
        from django.conf import settings
        from django.test import Client

        from bench.request_log_http import http_reads

        browser = Client()
        browser.force_login(reader)
        cookie = settings.SESSION_COOKIE_NAME
        signed_in = {"Cookie": f"{cookie}={browser.cookies[cookie].value}"}
        bearer = {"Authorization": f"Bearer {reading_key.secret}"}
        # The bench key with 10,000 requests among the 10 million, not the reader's own.
        key_requests = f"/api/v1/keys/{key.pk}/requests?limit=50"
        connection.close()
        http_reads(
            {
                "`GET /workspace` (the API's floor)": ("/api/v1/workspace", bearer),
                "`GET /keys/{id}/requests?limit=50`": (key_requests, bearer),
                "a key's page, signed in": (f"/integrations/api/keys/{key.pk}/", signed_in),
                "Logs page, signed in": ("/logs/", signed_in),
                "Logs page, 5xx": ("/logs/?status=5xx", signed_in),
            },
            args.repeat,
            args.port,
        )
    connection.close()
    subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", DATABASE])
    return 0


if __name__ == "__main__":
    sys.exit(main())
