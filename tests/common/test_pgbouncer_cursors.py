"""Long results through PgBouncer in transaction pooling (CI's third run): an export read in
chunks must not depend on a cursor WITH HOLD staying on one server connection, which PgBouncer
never promises. Here another client takes that server between two chunks, as any other
request would under load; with server-side cursors on, the export ended in "cursor does not
exist" (DATABASE_SERVER_SIDE_CURSORS=false in CI, deploy/pgbouncer.ini)."""

import csv
import io
import os

import psycopg
import pytest
from django.db import connection

from apps.audit.models import AuditEvent
from tests.factories import owner_of

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.mark.skipif(
    not os.environ.get("GATEHOUSE_PGBOUNCER"), reason="needs PgBouncer: the suite's third run"
)
def test_an_export_reads_on_while_another_client_holds_the_server_it_started_on(client):
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    AuditEvent.objects.bulk_create(
        AuditEvent(workspace=workspace, action="settings.changed", subject=f"change {n}")
        for n in range(1200)  # more than two of the export's chunks of 500
    )
    client.force_login(owner)
    answer = client.get("/audit/export.csv")
    chunks = iter(answer.streaming_content)
    body = b""
    while body.count(b"\n") < 20:  # the first chunk of rows was read
        body += next(chunks)
    settings = connection.settings_dict
    other = psycopg.connect(
        host=settings["HOST"], port=settings["PORT"], dbname=settings["NAME"], user=settings["USER"]
    )
    try:
        other.execute("SELECT 1")  # a transaction left open: it keeps its server connection
        body += b"".join(chunks)
    finally:
        other.close()
    rows = list(csv.reader(io.StringIO(body.decode())))
    changes = [row for row in rows[1:] if row[2] == "settings.changed"]
    assert len(changes) == 1200
