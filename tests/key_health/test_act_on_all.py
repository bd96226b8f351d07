"""Each Key health count is one click from acting on all it counts (PRODUCT §13): a page that
names every key (or service account) and what happens to it, then, confirmed, exactly that:
revoke the idle, narrow to what they use, re-create what expires, delete unused accounts."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.services import Actor
from apps.service_accounts.services import service_account_create, service_account_key_create
from apps.workspaces.models import ServiceAccount
from tests.client import Client
from tests.factories import WorkspaceFactory, make_key, owner_of

from .test_key_health import PAGE, age

pytestmark = pytest.mark.django_db


def act_url(slug):
    return f"{PAGE}{slug}/act/"


def planned_rows(client, slug):
    page = client.get(act_url(slug))
    assert page.status_code == 200
    rows = re.findall(r'<tr data-testid="act-row"[^>]*>(.*?)</tr>', page.content.decode(), re.S)
    return page, [re.sub(r"<[^>]+>", " ", row) for row in rows]


def ids_on(page):
    return re.findall(r'name="ids" value="(\d+)"', page.content.decode())


def test_the_tile_offers_revoking_all_it_counts_and_the_confirmation_names_them(client, owner):
    for n in range(2):
        age(make_key(user=owner, name=f"forgotten {n}"), days=120)
    busy = make_key(user=owner, name="busy")
    tiles = client.get(PAGE).content.decode()
    assert re.search(r'data-testid="act-idle-90">Revoke all 2…<', tiles)
    page, rows = planned_rows(client, "idle-90")
    assert len(rows) == 2 and all("Revoked: it fails from the next request on" in r for r in rows)
    assert "forgotten 0" in rows[0] and "forgotten 1" in rows[1]
    assert "busy" not in page.content.decode()
    assert ApiKey.objects.filter(revoked_at__isnull=False).count() == 0  # nothing yet

    done = client.post(act_url("idle-90"), {"ids": ids_on(page)}, follow=True)
    assert "Revoked 2 keys." in done.content.decode()
    assert ApiKey.objects.filter(name__startswith="forgotten", revoked_at__isnull=True).count() == 0
    assert ApiKey.objects.get(pk=busy.key.pk).revoked_at is None


def test_only_what_was_named_and_is_still_counted_is_acted_on(client, owner):
    idle = make_key(user=owner, name="idle")
    age(idle, days=120)
    busy = make_key(user=owner, name="busy")
    elsewhere = make_key(user=owner_of(WorkspaceFactory(name="Globex")), name="theirs")
    age(elsewhere, days=120)
    done = client.post(
        act_url("idle-90"), {"ids": [idle.key.pk, busy.key.pk, elsewhere.key.pk]}, follow=True
    )
    assert "Revoked 1 key. 2 no longer counted here, so left as they were." in (
        done.content.decode()
    )
    assert ApiKey.objects.get(pk=busy.key.pk).revoked_at is None
    assert ApiKey.objects.get(pk=elsewhere.key.pk).revoked_at is None


def test_narrowing_all_keeps_what_each_used_and_names_what_it_loses(client, owner):
    now = timezone.now()
    mixed = make_key(user=owner, name="mixed", scopes=["pages:read", "products:read"])
    idle = make_key(user=owner, name="idle", scopes=["pages:read"])
    for made in (mixed, idle):
        age(made, days=40)
    ApiKey.objects.filter(pk=mixed.key.pk).update(
        scope_last_used={"pages:read": (now - timedelta(days=1)).isoformat()}
    )
    page, rows = planned_rows(client, "unused-scopes")
    texts = {row.split()[0]: " ".join(row.split()) for row in rows}
    assert "Loses products:read." in texts["mixed"]
    assert "used none of its permissions: revoke it" in texts["idle"]
    assert ids_on(page) == [str(mixed.key.pk)]  # the skipped one is not sent

    client.post(act_url("unused-scopes"), {"ids": ids_on(page)})
    assert ApiKey.objects.get(pk=mixed.key.pk).scopes == ["pages:read"]
    assert ApiKey.objects.get(pk=idle.key.pk).scopes == ["pages:read"]  # left as it was


def test_recreating_all_that_expire_shows_each_new_secret_once(client, owner, admin):
    mine = make_key(user=owner, name="deploy", scopes=["pages:read"], expires_in=timedelta(days=3))
    theirs = make_key(user=admin, name="theirs", expires_in=timedelta(days=3))
    page, rows = planned_rows(client, "expiring")
    texts = {row.split()[0]: " ".join(row.split()) for row in rows}
    assert "A new key like it, expiring on" in texts["deploy"]
    assert "Held by admin@acme.test: only they can re-create it" in texts["theirs"]
    assert ids_on(page) == [str(mine.key.pk)]

    made = client.post(act_url("expiring"), {"ids": ids_on(page)})
    assert made.status_code == 200
    assert "no-store" in made["Cache-Control"] or "no-cache" in made["Cache-Control"]
    [secret] = re.findall(r'data-testid="new-secret">(gwk_\w+)<', made.content.decode())
    new = ApiKey.objects.exclude(pk__in=[mine.key.pk, theirs.key.pk]).get(name="deploy")
    assert new.scopes == ["pages:read"] and new.user == owner
    assert new.expires_at > timezone.now() + timedelta(days=300)
    assert Client().get("/api/v1/pages", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200
    assert ApiKey.objects.get(pk=mine.key.pk).revoked_at is None  # until the owner revokes it


def test_deleting_all_unused_service_accounts_is_an_owners_act(client, owner, admin, workspace):
    by_owner = Actor.of_user(owner)
    account = service_account_create(workspace=workspace, name="Old sync", actor=by_owner)
    key = service_account_key_create(
        account=account, name="sync", scopes=["pages:read"], expires_at=None, actor=by_owner
    ).key
    ServiceAccount.objects.filter(pk=account.pk).update(
        created_at=timezone.now() - timedelta(days=60)
    )
    admin_client = Client()
    admin_client.force_login(admin)
    _, rows = planned_rows(admin_client, "unused-service-accounts")
    assert "Only an owner deletes service accounts." in rows[0]
    admin_client.post(act_url("unused-service-accounts"), {"ids": [account.pk]})
    assert ServiceAccount.objects.get(pk=account.pk).deleted_at is None

    page, rows = planned_rows(client, "unused-service-accounts")
    assert "Old sync" in rows[0] and "every key of it revoked" in rows[0]
    done = client.post(act_url("unused-service-accounts"), {"ids": ids_on(page)}, follow=True)
    assert "Deleted 1 service account." in done.content.decode()
    assert ServiceAccount.objects.get(pk=account.pk).deleted_at is not None
    assert ApiKey.objects.get(pk=key.pk).revoked_at is not None


def test_a_check_without_an_act_or_a_member_gets_no_act_page(client, owner):
    assert client.get(act_url("pending")).status_code == 404
    assert client.get(act_url("idle-warned")).status_code == 404  # no idle policy here
    assert client.post(act_url("no-such-check"), {"ids": [1]}).status_code == 404
