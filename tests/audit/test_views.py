import csv
import io
import re
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.core.management import call_command
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.key_expiry.models import ExpiryNotice
from apps.workspaces.services import workspace_update
from tests.conftest import run_tasks
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


def expiry_notices() -> None:
    """The operator's command, then a worker sends what it queued."""
    call_command("sendexpirynotices")
    run_tasks()


def test_expiry_notices_go_out_once_each(workspace, owner):
    start = timezone.now()
    created = make_key(
        user=owner, workspace=workspace, name="Deploys", expires_in=timedelta(days=10)
    )
    make_key(user=owner, workspace=workspace, name="Forever", expires_in=None)
    with time_machine.travel(start + timedelta(days=2)):  # 8 days left: nothing yet
        expiry_notices()
        assert mail.outbox == []
    with time_machine.travel(start + timedelta(days=3, hours=1)):  # inside 7 days
        expiry_notices()
        expiry_notices()
        assert len(mail.outbox) == 1
        assert "Deploys" in mail.outbox[0].subject and mail.outbox[0].to == [owner.email]
    with time_machine.travel(start + timedelta(days=9, hours=1)):  # inside 1 day
        expiry_notices()
        expiry_notices()
        assert len(mail.outbox) == 2
        assert "within a day" in mail.outbox[1].subject
    with time_machine.travel(start + timedelta(days=11)):  # expired: nothing more
        expiry_notices()
    assert len(mail.outbox) == 2
    assert set(ExpiryNotice.objects.filter(key=created.key).values_list("kind", flat=True)) == {
        "7d",
        "1d",
        "0d",  # its key.expired event, no e-mail
    }


def test_a_key_first_seen_within_a_day_gets_only_the_one_day_notice(workspace, owner):
    make_key(user=owner, workspace=workspace, expires_in=timedelta(hours=20))
    expiry_notices()
    expiry_notices()
    assert len(mail.outbox) == 1
    assert ExpiryNotice.objects.get().kind == "1d"


def test_revoked_keys_get_no_notice(workspace, owner):
    created = make_key(user=owner, workspace=workspace, expires_in=timedelta(days=3))
    api_key_revoke(key=created.key, actor=Actor.of_user(owner))
    expiry_notices()
    assert mail.outbox == []


def test_expired_shows_without_any_job(client, workspace, owner):
    created = make_key(user=owner, workspace=workspace, name="Short", expires_in=timedelta(hours=1))
    client.force_login(owner)
    with time_machine.travel(created.key.expires_at + timedelta(seconds=1)):
        page = client.get("/integrations/api/").content.decode()
        assert ">Expired<" in page


def test_the_expiry_notice_links_to_a_prefilled_recreate_form_and_the_key_page(
    client, workspace, owner, settings
):
    import re

    settings.SITE_URL = "https://gatehouse.example.com"
    workspace.timezone = "Europe/Berlin"
    workspace.save(update_fields=["timezone"])
    created = make_key(
        user=owner,
        workspace=workspace,
        name="Deploys",
        scopes=["pages:read", "products:write"],
        expires_in=timedelta(days=5),
    )
    ApiKey.objects.filter(pk=created.key.pk).update(description="Used by the deploy bot.")
    expiry_notices()
    body = mail.outbox[0].body
    # The moment in the workspace's zone, named once ("… 10:25 CET, in 4 days").
    assert re.search(r"expires on \w{3} \d+, \d{4} \d\d:\d\d CET, in \d days", body)
    assert "(Europe/Berlin)" not in body
    recreate = re.search(r"https://gatehouse\.example\.com(/\S+\?from=\d+)", body).group(1)
    key_page = f"https://gatehouse.example.com/integrations/api/keys/{created.key.pk}/"
    assert key_page in body
    client.force_login(owner)
    form = client.get(recreate).content.decode()
    assert 'value="Deploys"' in form and "Used by the deploy bot." in form
    assert 'name="access_pages" value="read" checked' in form
    assert 'name="access_products" value="write_only" checked' in form  # exactly as it was
    assert 'name="access_communities" value="none" checked' in form
    assert created.secret not in body


def test_events_about_a_key_link_to_its_page(client, owner, history):
    first, _ = history
    client.force_login(owner)
    assert f'href="/integrations/api/keys/{first.pk}/"' in table(client.get(URL))
