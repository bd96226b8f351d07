"""The request log where people look: a key's page (latest requests, by outcome, a row's
details), the Logs page (filters, a request found by its id, CSV), a member's own key in the
portal, and a revoked key's blast radius."""

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.request_log.models import RequestLogEntry
from apps.request_log.partitions import partitions_ensure
from tests.conftest import auth
from tests.factories import make_community, make_key, member_of

pytestmark = pytest.mark.django_db


def calls(client, secret: str) -> dict[str, str]:
    """Three requests of a key (one refused, one creating a page); their Request-Ids by name."""
    ids = {}
    ids["read"] = client.get("/api/v1/workspace?token=hidden", **auth(secret))["Request-Id"]
    ids["refused"] = client.get("/api/v1/products", **auth(secret))["Request-Id"]
    created = client.post(
        "/api/v1/pages",
        {"title": "Leaked", "slug": "leaked", "body": ""},
        content_type="application/json",
        REMOTE_ADDR="198.51.100.7",
        **auth(secret),
    )
    assert created.status_code == 201
    ids["create"] = created["Request-Id"]
    ids["page"] = str(created.json()["id"])
    return ids


def test_a_keys_page_shows_its_latest_requests_by_outcome(client, owner):
    key = make_key(user=owner, scopes=["pages:read", "pages:write"], name="Sync")
    ids = calls(client, key.secret)
    page = client.get(f"/integrations/api/keys/{key.key.pk}/").content.decode()
    section = page[page.index('id="requests"') :]
    assert section.index(ids["create"]) < section.index(ids["refused"]) < section.index(ids["read"])
    assert "token=hidden" not in page
    assert "insufficient-scope" in section and "Open in Logs" in section
    refused_only = client.get(f"/integrations/api/keys/{key.key.pk}/?requests=4xx").content.decode()
    section = refused_only[refused_only.index('id="requests"') :]
    assert ids["refused"] in section and ids["read"] not in section


def test_the_logs_page_filters_finds_by_request_id_and_exports_what_it_shows(client, owner):
    sync = make_key(user=owner, scopes=["pages:read", "pages:write"], name="Sync")
    other = make_key(user=owner, scopes=["pages:read"], name="Reporter")
    ids = calls(client, sync.secret)
    other_id = client.get("/api/v1/pages", **auth(other.secret))["Request-Id"]

    everything = client.get("/logs/").content.decode()
    assert all(
        i in everything for i in (*[ids[k] for k in ("read", "refused", "create")], other_id)
    )
    by_key = client.get(f"/logs/?key={other.key.pk}").content.decode()
    assert other_id in by_key and ids["read"] not in by_key
    found = client.get(f"/logs/?q={ids['refused']}").content.decode()
    assert ids["refused"] in found and ids["read"] not in found
    refused = client.get("/logs/?status=4xx").content.decode()
    assert ids["refused"] in refused and ids["create"] not in refused
    by_address = client.get("/logs/?address=198.51.100.7").content.decode()
    assert ids["create"] in by_address and ids["read"] not in by_address
    bad = client.get("/logs/?address=fe80::1%25eth0&status=7xx&key=abc&since=2026-13-01")
    assert bad.status_code == 200
    assert "Ignored the key, status, since, address filters" in bad.content.decode()

    csv_text = b"".join(client.get("/logs/export.csv?status=4xx").streaming_content).decode()
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("time,time_utc,request_id,key_id,key_name")
    # The time as the page writes it, in the workspace's zone, then exactly in UTC.
    first = next(csv.DictReader(io.StringIO(csv_text)))
    assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d\d:\d\d UTC", first["time"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", first["time_utc"])
    assert len(lines) == 2 and ids["refused"] in lines[1] and "insufficient-scope" in lines[1]


def test_logs_are_for_owners_and_admins_of_this_workspace_only(client, owner, admin, stranger):
    key = make_key(user=owner, scopes=["pages:read"])
    request_id = client.get("/api/v1/workspace", **auth(key.secret))["Request-Id"]
    client.force_login(admin)
    assert request_id in client.get("/logs/").content.decode()
    client.force_login(stranger)
    assert request_id not in client.get("/logs/").content.decode()
    assert (
        "No requests match these filters" in client.get(f"/logs/?q={request_id}").content.decode()
    )
    assert client.get(f"/integrations/api/keys/{key.key.pk}/").status_code == 404


def test_a_member_sees_their_own_keys_requests_in_the_portal(client):
    community = make_community(name="Makers")
    member = member_of(community, email="maker@example.com")
    mine = make_key(
        user=member, workspace=community.workspace, kind="member", scopes=["communities:read"]
    )
    request_id = client.get("/api/v1/communities", **auth(mine.secret))["Request-Id"]
    client.force_login(member)
    page = client.get(f"/portal/settings/developer/keys/{mine.key.pk}/").content.decode()
    assert request_id in page and "Open in Logs" not in page
    assert client.get("/logs/").status_code in (302, 403)


def test_a_revoked_keys_page_shows_what_it_did_and_from_where(client, owner):
    key = make_key(user=owner, scopes=["pages:read", "pages:write"], name="Leaky")
    ids = calls(client, key.secret)
    api_key_revoke(key=key.key, actor=Actor.of_user(owner))
    page = client.get(f"/integrations/api/keys/{key.key.pk}/").content.decode()
    radius = page[page.index('data-testid="blast-radius"') :]
    assert "3 requests" in radius and "24 hours before it was revoked" in radius
    objects = radius[radius.index('data-testid="blast-objects"') :]
    assert "create_page" in objects and ids["page"] in objects
    addresses = radius[radius.index('data-testid="blast-addresses"') :]
    assert "198.51.100.7" in addresses and "127.0.0.1" in addresses
    later = client.get(
        f"/integrations/api/keys/{key.key.pk}/?since=2999-01-01T00:00"
    ).content.decode()
    assert "No request in this time." in later
    assert RequestLogEntry.objects.filter(key_id=key.key.pk).count() == 3


def test_logs_placeholders_read_as_empty_filters_not_as_values_entered(client, owner):
    page = client.get("/logs/").content.decode()
    placeholders = re.findall(r'placeholder="([^"]*)"', page)
    assert placeholders and all(p.startswith(("any ", "req_")) for p in placeholders), placeholders
    assert 'size="30"' in page  # the request-id field holds a whole id


def test_a_request_id_search_opens_the_row_it_finds(client, owner):
    key = make_key(user=owner)
    found = calls(client, key.secret)["refused"]
    page = client.get("/logs/", {"q": found}).content.decode()
    assert f'data-request-id="{found}">\n    <details open data-found>' in page


def test_logs_rows_escape_every_value_and_say_what_is_missing(client, owner):
    """The rows are written in Python (apps/request_log/rows.py), not by the template engine:
    every value a key's caller or its maker chose comes out escaped, and the facts a request
    lacks are said in words."""
    key = make_key(user=owner, name="<b>Sync</b>")
    workspace = key.key.workspace
    now = timezone.now()
    partitions_ensure({now.date(), (now - timedelta(seconds=1)).date()})  # PostgreSQL's days
    common = dict(workspace_id=workspace.pk, method="GET", status=200, client_ip=None)
    RequestLogEntry.objects.create(
        **common,
        at=now,
        key_id=key.key.pk,
        door="api",
        path='/api/v1/pages/"><script>alert(1)</script>',
        operation="get_page",
        duration_ms=12.25,
        user_agent="<img src=x onerror=alert(2)>",
        request_id="req_" + "a" * 24,
        object_id="<i>obj</i>",
    )
    RequestLogEntry.objects.create(
        **common,
        at=now - timedelta(seconds=1),
        key_id=key.key.pk + 1000,  # a key since deleted
        door="mcp",
        path="/mcp",
        operation="mcp:list_<pages>",
        duration_ms=None,
        user_agent="",
        request_id="req_" + "b" * 24,
    )
    page = client.get("/logs/").content.decode()
    rows = page[page.index('data-testid="requests"') :]
    assert "<script>" not in rows and "<img" not in rows and "<b>Sync" not in rows
    assert "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in rows
    assert "&lt;b&gt;Sync&lt;/b&gt;" in rows and "&lt;i&gt;obj&lt;/i&gt;" in rows
    assert "12.3 ms" in rows  # rounded half up, as floatformat:1 did
    assert "no answer recorded" in rows and "deleted key" in rows
    assert '<span class="badge badge--muted">list_&lt;pages&gt;</span>' in rows
    assert "unknown address" in rows and "none sent" in rows
    assert rows.count('<li class="request request--success"') == 2
