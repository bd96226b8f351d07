"""The key inventory: filters, search, the Expiring badge, bulk revoke, CSV export."""

import csv
import io
import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from tests.conftest import auth
from tests.factories import MembershipFactory, UserFactory, make_key

pytestmark = pytest.mark.django_db
LIST = "/integrations/api/"


@pytest.fixture
def inventory(workspace, owner):
    admin = UserFactory(email="admin@acme.test")
    MembershipFactory(workspace=workspace, user=admin, role="admin")
    now = timezone.now()
    keys = {
        "zapier": make_key(user=owner, workspace=workspace, name="Zapier sync"),
        "cli": make_key(user=owner, workspace=workspace, name="CLI on laptop", tag="cli"),
        "forever": make_key(user=admin, workspace=workspace, name="Warehouse", expires_in=None),
        "soon": make_key(
            user=admin, workspace=workspace, name="Soon", expires_in=timedelta(days=3)
        ),
        "old": make_key(user=owner, workspace=workspace, name="Forgotten"),
    }
    ApiKey.objects.filter(pk=keys["old"].key.pk).update(created_at=now - timedelta(days=60))
    return keys


def names(response) -> set[str]:
    page = response.content.decode()
    return {
        name
        for name in ("Zapier sync", "CLI on laptop", "Warehouse", "Soon", "Forgotten")
        if f">{name}</a>" in page
    }


def test_filters_and_search(client, inventory, owner):
    assert names(client.get(LIST)) == {
        "Zapier sync",
        "CLI on laptop",
        "Warehouse",
        "Soon",
        "Forgotten",
    }
    assert names(client.get(LIST, {"kind": "cli"})) == {"CLI on laptop"}
    assert "CLI on laptop" not in names(client.get(LIST, {"kind": "workspace"}))
    admin = inventory["forever"].key.user
    assert names(client.get(LIST, {"holder": str(admin.pk)})) == {"Warehouse", "Soon"}
    assert names(client.get(LIST, {"no_expiry": "1"})) == {"Warehouse"}
    expiring = client.get(LIST, {"expiring": "1"})
    assert names(expiring) == {"Soon"} and "Expiring</span>" in expiring.content.decode()
    assert names(client.get(LIST, {"unused": "1"})) == {"Forgotten"}
    assert names(client.get(LIST, {"q": "zap"})) == {"Zapier sync"}
    hint = inventory["soon"].key.hint
    assert names(client.get(LIST, {"q": hint[-4:]})) >= {"Soon"}


@pytest.mark.parametrize(
    "query", [{"holder": "²"}, {"kind": "robot"}, {"state": "zombie"}, {"q": "x\x00"}]
)
def test_a_bad_filter_is_ignored_and_said(client, inventory, query):
    response = client.get(LIST, query)
    assert response.status_code == 200
    assert "Ignored the" in response.content.decode()
    assert len(names(response)) == 5


def test_bulk_revoke_asks_once_then_revokes_only_what_was_selected(client, inventory):
    chosen = [inventory["zapier"].key.pk, inventory["soon"].key.pk]
    theirs = make_key()
    confirm = client.post(LIST + "revoke-selected/", {"keys": [*chosen, theirs.key.pk]})
    assert confirm.status_code == 200 and "Revoke 2 keys?" in confirm.content.decode()
    assert ApiKey.objects.filter(revoked_at__isnull=False).count() == 0
    done = client.post(LIST + "revoke-selected/", {"keys": chosen, "confirm": "yes"}, follow=True)
    assert "Revoked 2 keys" in done.content.decode()
    assert set(ApiKey.objects.filter(revoked_at__isnull=False).values_list("pk", flat=True)) == set(
        chosen
    )
    assert AuditEvent.objects.filter(action="key.revoked").count() == 2
    assert client.get("/api/v1/workspace", **auth(theirs.secret)).status_code == 200
    assert client.get("/api/v1/workspace", **auth(inventory["cli"].secret)).status_code == 200


def test_the_csv_export_follows_the_filters_and_holds_no_secret(client, inventory):
    response = client.get(LIST + "export.csv", {"holder": str(inventory["forever"].key.user_id)})
    body = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert {row["name"] for row in rows} == {"Warehouse", "Soon"}
    assert rows[0]["holder"] == "admin@acme.test" and rows[0]["scopes"]
    # Times as the pages write them, in the workspace's zone, named.
    assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d\d:\d\d UTC", rows[0]["created_at"])
    for created in inventory.values():
        assert created.secret not in body and created.key.secret_hash not in body


def test_the_last_use_ip_is_on_the_list_not_only_on_hover(client, inventory):
    client.get("/api/v1/workspace", **auth(inventory["zapier"].secret), REMOTE_ADDR="198.51.100.23")
    page = client.get(LIST).content.decode()
    # Shown in the row (cut with an ellipsis only when it is longer than its column).
    assert (
        '<div class="mono muted small"><span class="clip clip--short" title="198.51.100.23">'
        "198.51.100.23</span></div>" in page
    )


def test_the_list_opens_on_active_keys_with_the_others_one_click_away(client, inventory, owner):
    from apps.api_keys.services import api_key_revoke
    from apps.audit.services import Actor

    api_key_revoke(key=inventory["cli"].key, actor=Actor.of_user(owner))
    default = client.get(LIST)
    assert names(default) == {"Zapier sync", "Warehouse", "Soon", "Forgotten"}
    page = default.content.decode()
    assert "Showing active keys and keys waiting for approval." in page
    assert 'Show revoked, expired and denied keys too (<span id="inactive-count">1</span>)' in page
    assert 'href="/integrations/api/?state=all"' in page
    assert "CLI on laptop" in names(client.get(LIST, {"state": "all"}))
    assert names(client.get(LIST, {"state": "revoked"})) == {"CLI on laptop"}


def test_the_unused_filter_and_the_unused_flag_are_one_definition(client, workspace, owner):
    """A key used every day, but never for one of its permissions, is flagged on the list and
    found by the filter alike."""
    start = timezone.now() - timedelta(days=40)
    with time_machine.travel(start, tick=False):
        partly = make_key(
            user=owner, workspace=workspace, name="Partly", scopes=["pages:read", "pages:write"]
        )
        fully = make_key(user=owner, workspace=workspace, name="Fully", scopes=["pages:read"])
    for secret in (partly.secret, fully.secret):
        assert client.get("/api/v1/pages", **auth(secret)).status_code == 200
    listing = client.get(LIST).content.decode()
    flagged = {
        name
        for name in ("Partly", "Fully")
        if "unused for 30 days" in listing.split(f">{name}</a>", 1)[1].split("</tr>", 1)[0]
    }
    filtered = client.get(LIST, {"unused": "1"}).content.decode()
    found = {name for name in ("Partly", "Fully") if f">{name}</a>" in filtered}
    assert flagged == found == {"Partly"}


def test_the_list_reads_as_many_queries_for_twenty_keys_as_for_two(client, owner, workspace):
    """No query a row: each row's "Outside policy" badge reads the workspace's policy, which
    comes with the keys (one query for 20 rows, not one each)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(owner)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(LIST).status_code == 200
        return len(captured)

    for n in range(2):
        make_key(user=owner, workspace=workspace, name=f"key {n}")
    few = queries()
    for n in range(2, 20):
        make_key(user=owner, workspace=workspace, name=f"key {n}")
    assert queries() == few
