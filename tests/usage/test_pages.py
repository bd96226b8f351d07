"""Usage in the dashboard: a key's charts, the workspace's Usage page, its CSV."""

import csv
import io
import re

import pytest

from apps.workspaces.models import Membership
from tests.conftest import auth
from tests.factories import UserFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db


def call(client, secret: str, path: str, times: int, **extra) -> None:
    for _ in range(times):
        client.get(f"/api/v1{path}", **auth(secret), **extra)


def table_total(page: str, title: str) -> str:
    figure = page.split(title)[1]
    return re.search(r"([\d,]+) requests?", figure).group(1)


def test_a_keys_page_charts_its_requests_by_day_and_hour(client, owner):
    created = make_key(user=owner, scopes=["pages:read"], name="Charted")
    call(client, created.secret, "/pages", 7)
    call(client, created.secret, "/products", 2)  # 403: no products:read
    page = client.get(f"/integrations/api/keys/{created.key.pk}/").content.decode()
    assert table_total(page, "Requests a day, last 30 days") == "9"
    assert table_total(page, "Requests an hour, last 24 hours") == "9"
    assert page.count('class="seg seg--2xx"') == 2 and page.count('class="seg seg--403"') == 2
    assert '<th scope="col"><abbr title="Refused: permission">403</abbr></th>' in page
    assert "<td>7</td><td>2</td><td>9</td>" in page  # the table behind the daily chart
    other = make_key(user=owner, name="Quiet")
    quiet = client.get(f"/integrations/api/keys/{other.key.pk}/").content.decode()
    assert "No requests in this period." in quiet and 'class="seg ' not in quiet


def test_the_usage_page_names_the_busiest_keys_of_this_workspace_only(client, owner):
    busy = make_key(user=owner, name="Busy sync")
    calm = make_key(user=owner, name="Calm sync")
    elsewhere = make_key(name="Other workspace")
    call(client, busy.secret, "/workspace", 12)
    call(client, calm.secret, "/workspace", 3)
    call(client, elsewhere.secret, "/workspace", 50)
    page = client.get("/usage/").content.decode()
    assert page.index("Busy sync") < page.index("Calm sync")
    assert "Other workspace" not in page
    assert "<strong>15</strong>" in page  # requests in 30 days
    rows = list(csv.DictReader(io.StringIO(b"".join(client.get("/usage/export.csv")).decode())))
    assert {(r["key_name"], r["operation"], r["outcome"], r["count"]) for r in rows} == {
        ("Busy sync", "get_workspace", "2xx", "12"),
        ("Calm sync", "get_workspace", "2xx", "3"),
    }


def test_the_usage_page_is_for_owners_and_admins(client, owner, admin):
    assert client.get("/usage/").status_code == 200
    client.force_login(admin)
    assert client.get("/usage/").status_code == 200
    member = UserFactory()
    Membership.objects.create(
        workspace=owner.memberships.get().workspace, user=member, role="member"
    )
    client.force_login(member)
    assert client.get("/usage/").status_code in (302, 403)
    empty = WorkspaceFactory()
    client.force_login(owner_of(empty))
    assert (
        "No key has made a request in the last 30 days." in client.get("/usage/").content.decode()
    )
