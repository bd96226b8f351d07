"""One vocabulary on the pages: the same words for the same things, and no control that
leads nowhere."""

import re

import pytest

from tests.factories import make_key

pytestmark = pytest.mark.django_db


def text_of(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def test_every_export_is_export_csv_and_every_file_is_named_alike(client, owner):
    for page in ("/integrations/api/", "/audit/", "/logs/", "/usage/"):
        text = text_of(client.get(page))
        assert "Download CSV" not in text, page
    make_key(user=owner)
    names = []
    for export in ("/integrations/api/", "/audit/", "/logs/", "/usage/"):
        export += "export.csv"
        answer = client.get(export)
        names.append(re.search(r'filename="([^"]+)"', answer["Content-Disposition"])[1])
    for name in names:
        assert re.fullmatch(r"gatehouse-[a-z]+-\d{8}-\d{6}\.csv", name), name


def test_a_waiting_key_says_waiting_as_the_approvals_page_does(client, owner, admin):
    workspace = owner.memberships.get().workspace
    workspace.key_approval = "write"
    workspace.save(update_fields=["key_approval"])
    waiting = make_key(user=admin, workspace=workspace, name="Publisher", scopes=["pages:write"])
    for page in ("/integrations/api/", f"/integrations/api/keys/{waiting.key.pk}/"):
        html = client.get(page).content.decode()
        assert '<span class="badge badge--pending"' in html
        assert ">Waiting</span>" in html and ">Pending</span>" not in html, page
    # One key to decide on: no checkbox for a bulk action that is not there.
    approvals = client.get("/integrations/api/waiting/").content.decode()
    assert 'form="decide-many"' not in approvals.split('id="waiting-title"')[1].split("</ul>")[0]


def test_the_key_page_names_permissions_as_the_list_does(client, owner):
    key = make_key(user=owner, scopes=["communities:read"]).key
    text = text_of(client.get(f"/integrations/api/keys/{key.pk}/"))
    assert "Communities: Read communities:read" in text


def test_settings_says_time_zone_and_team_shows_every_role(client, owner, admin):
    assert "Scheduling time zone" in text_of(client.get("/settings/"))
    team = client.get("/settings/team/").content.decode()
    assert '<span class="badge badge--role">Admin</span>' in team
