"""The 7-day and 1-day expiry notices (apps/key_expiry): once each, never for a revoked key,
linking to a prefilled re-create form."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.core.management import call_command
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.key_expiry.models import ExpiryNotice
from tests.conftest import run_tasks
from tests.factories import WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(workspace):
    return owner_of(workspace, email="owner@acme.test")


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
