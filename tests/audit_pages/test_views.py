import csv
import io
import re

import pytest
import time_machine

from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.workspaces.services import workspace_update
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
URL = "/audit/"


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(workspace):
    return owner_of(workspace, email="owner@acme.test")


@pytest.fixture
def history(workspace, owner):
    """Two keys, one revoked by the owner, one revoked by an operator."""
    first = make_key(user=owner, workspace=workspace, name="Zapier").key
    second = make_key(user=owner, workspace=workspace, name='=HYPERLINK("evil")').key
    api_key_revoke(key=first, actor=Actor.of_user(owner, "192.0.2.1"))
    api_key_revoke(key=second, actor=Actor.of_operator("revokeapikey"))
    return first, second


def table(response) -> str:
    page = response.content.decode()
    return page[page.index("<tbody>") :] if "<tbody>" in page else ""


def csv_rows(response) -> list[list[str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(body)))


def test_audit_page_lists_events_newest_first(client, owner, history):
    client.force_login(owner)
    page = table(client.get(URL))
    assert page.index("Key revoked") < page.index("Key created")
    assert "operator (revokeapikey)" in page and "192.0.2.1" in page


def test_filters_by_action_actor_and_key(client, owner, history):
    first, second = history
    client.force_login(owner)
    by_action = table(client.get(URL, {"action": "key.revoked"}))
    assert by_action.count("badge--keyrevoked") == 2 and "badge--keycreated" not in by_action
    by_actor = table(client.get(URL, {"actor": "operator"}))
    assert "operator (revokeapikey)" in by_actor and "192.0.2.1" not in by_actor
    by_key = table(client.get(URL, {"key": str(first.pk)}))
    assert "Zapier" in by_key and "HYPERLINK" not in by_key
    assert client.get(URL, {"action": "nonsense", "key": "x"}).status_code == 200


BAD_FILTERS = [
    {"key": "\u00b2"},
    {"key": "\u0663"},
    {"actor": "user:\u00b2"},
    {"actor": "key:\u00b9"},
    {"actor": "user:99999999999999999999999999"},
    {"key": "9223372036854775808"},
    {"key": "-1"},
    {"key": "0"},
    {"action": "key.revoked\u0000"},
]


@pytest.mark.parametrize("query", BAD_FILTERS, ids=[str(q) for q in BAD_FILTERS])
def test_a_filter_that_cannot_be_right_is_ignored_and_said_not_a_500(client, owner, history, query):
    client.force_login(owner)
    page = client.get(URL, query)
    assert page.status_code == 200
    assert f"Ignored the {next(iter(query))} filter" in page.content.decode()
    assert page.content.decode().count("badge--keyrevoked") == 2  # every event still listed
    export = client.get("/audit/export.csv", query)
    assert export.status_code == 200
    rows = csv_rows(export)[1:]
    assert [row[2] for row in rows if not row[2].startswith("account.")] == [
        "key.revoked",
        "key.revoked",
        "key.created",
        "key.created",
    ]  # every event still exported; the owner's sign-in is in the log too


@pytest.mark.parametrize(
    "path",
    [
        "/communities/99999999999999999999/",
        "/communities/9223372036854775808/",
        "/integrations/api/keys/99999999999999999999/revoke/",
        "/settings/team/99999999999999999999/",
    ],
)
def test_an_id_past_the_database_integer_in_a_path_is_a_404(client, owner, path):
    client.force_login(owner)
    assert client.get(path).status_code == 404
    assert client.post(path).status_code == 404


def test_csv_export_of_the_filtered_view(client, owner, history):
    first, _ = history
    client.force_login(owner)
    response = client.get(URL + "export.csv", {"action": "key.revoked"})
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    header, *rows = csv_rows(response)
    rows = [dict(zip(header, row, strict=True)) for row in rows]
    assert [row["action"] for row in rows] == ["key.revoked", "key.revoked"]
    assert rows[0]["action_label"] == "Key revoked"
    assert rows[1]["actor"] == "owner@acme.test" and rows[1]["ip"] == "192.0.2.1"
    assert rows[1]["key_hint"] == first.hint
    # A name that looks like a formula is neutralised for spreadsheets.
    assert rows[0]["subject"].startswith("'=HYPERLINK")


def test_csv_has_one_clean_column_per_fact(client, owner, workspace):
    workspace_update(
        workspace=workspace,
        changes={"auto_transcribe_uploads": True, "key_max_lifetime_days": 90},
        actor=Actor.of_user(owner, "192.0.2.1"),
    )
    make_key(user=owner, workspace=workspace, name="Reader", scopes=["communities:read"])
    client.force_login(owner)
    header, *rows = csv_rows(client.get(URL + "export.csv"))
    rows = {row[header.index("subject")]: dict(zip(header, row, strict=True)) for row in rows}
    transcription = rows["Automatic transcription"]
    assert (transcription["field"], transcription["before"], transcription["after"]) == (
        "Automatic transcription",
        "Off",
        "On",
    )
    assert rows["Longest lifetime of a new key"]["after"] == "90 days"
    created = next(row for row in rows.values() if row["action"] == "key.created")
    assert created["permissions"] == "Communities: Read"
    assert "[" not in created["details"] and "scopes=" not in created["details"]
    # The time as the page writes it (its zone named), and exactly in UTC beside it.
    assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}, \d{4} \d\d:\d\d UTC", created["time"])
    assert created["time_utc"].endswith("+00:00")


def test_the_page_shows_labels_and_values_as_people_read_them(client, owner, workspace):
    workspace_update(
        workspace=workspace,
        changes={"auto_transcribe_uploads": True},
        actor=Actor.of_user(owner),
    )
    client.force_login(owner)
    page = client.get(URL).content.decode()
    assert "Automatic transcription" in page and (
        '<span class="audit-before">Off</span> → <span class="audit-after">On</span>' in page
    )
    assert (
        "auto_transcribe_uploads"
        not in page.split("<main", 1)[1].split("<form", 1)[0] + (page.split("</form>", 1)[1])
    )
    assert "False" not in page and "True" not in page


def test_the_date_range_is_days_in_the_workspaces_time_zone(client, owner, workspace):
    workspace.timezone = "Europe/Berlin"
    workspace.save()
    for moment, name in [
        ("2026-11-20 22:30:00Z", "Late on the 20th in UTC"),  # 23:30 on the 20th in Berlin
        ("2026-11-20 23:30:00Z", "Early on the 21st"),  # 00:30 on the 21st in Berlin
        ("2026-11-22 12:00:00Z", "On the 22nd"),
    ]:
        with time_machine.travel(moment, tick=False):
            make_key(user=owner, workspace=workspace, name=name)
    client.force_login(owner)
    page = client.get(URL, {"since": "2026-11-21", "until": "2026-11-21"}).content.decode()
    page = page.split("<table", 1)[1]  # the rows, not the filter menus
    assert "Early on the 21st" in page
    assert "Late on the 20th" not in page and "On the 22nd" not in page
    backwards = client.get(URL, {"since": "2026-11-22", "until": "2026-11-21"}).content.decode()
    assert "Ignored the to date filter" in backwards
    bad = client.get(URL, {"since": "21/11/2026"}).content.decode()
    assert "Ignored the from date filter" in bad


def test_events_of_another_workspace_never_show(client, owner, history):
    stranger = owner_of(WorkspaceFactory(), email="stranger@elsewhere.test")
    client.force_login(stranger)
    assert "Zapier" not in client.get(URL).content.decode()
    rows = csv_rows(client.get(URL + "export.csv"))[1:]
    assert [(row[2], row[4]) for row in rows] == [("account.signed_in", "stranger@elsewhere.test")]


@pytest.mark.parametrize("role, status", [("owner", 200), ("admin", 200), ("member", 403)])
def test_who_may_read_the_log(client, workspace, role, status):
    user = MembershipFactory(workspace=workspace, role=role).user
    client.force_login(user)
    assert client.get(URL).status_code == status
    assert client.get(URL + "export.csv").status_code == status


def test_outsiders_and_anonymous_visitors_may_not(client):
    client.force_login(UserFactory())
    assert client.get(URL).status_code == 403
    client.logout()
    assert client.get(URL).status_code == 302


def test_pagination(client, owner, workspace):
    for number in range(55):
        make_key(user=owner, workspace=workspace, name=f"k{number}")
    client.force_login(owner)
    assert "Page 1 of 2" in client.get(URL).content.decode()


def test_admin_shows_keys_and_events_read_only(client, history):
    staff = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(staff)
    assert client.get("/admin/api_keys/apikey/").status_code == 200
    assert client.get("/admin/audit/auditevent/").status_code == 200
    key = ApiKey.objects.first()
    event = AuditEvent.objects.first()
    assert client.get("/admin/api_keys/apikey/add/").status_code == 403
    assert (
        client.post(f"/admin/audit/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    page = client.get(f"/admin/api_keys/apikey/{key.pk}/change/").content.decode()
    assert key.secret_hash not in page
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_events_about_a_key_link_to_its_page(client, owner, history):
    first, _ = history
    client.force_login(owner)
    assert f'href="/integrations/api/keys/{first.pk}/"' in table(client.get(URL))
