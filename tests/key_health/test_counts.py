"""Key health counts what PRODUCT §13 says, at the moment the page is drawn: a connected app's
key, which renews itself, is never "expiring"; a service account made a minute ago is not
"unused 30 days"; under a key policy with idleDays, the keys warned for idleness have a tile."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.services import Actor
from apps.idle_keys.sweep import idle_keys_job
from apps.service_accounts.services import service_account_create
from apps.workspaces.models import Workspace
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def tile(client, slug: str) -> int:
    page = client.get("/integrations/api/health/")
    assert page.status_code == 200
    check = next(c for c in page.context["checks"] if c.slug == slug)
    return check.count


def test_a_connected_apps_key_that_renews_itself_is_never_expiring(client, owner):
    make_key(user=owner, name="Soon", expires_in=timedelta(days=3))
    make_key(user=owner, name="Renewing app key", expires_in=timedelta(hours=1), tag=ApiKey.Tag.MCP)
    assert tile(client, "expiring") == 1
    listed = client.get("/integrations/api/?expiring=1").content.decode()
    assert "Soon" in listed and "Renewing app key" not in listed


def test_a_service_account_made_a_minute_ago_is_not_unused_yet(client, owner, workspace):
    start = timezone.now()
    service_account_create(workspace=workspace, name="CI deploy", actor=Actor.of_user(owner))
    assert tile(client, "unused-service-accounts") == 0
    with time_machine.travel(start + timedelta(days=31), tick=False):
        client.force_login(owner)
        assert tile(client, "unused-service-accounts") == 1


def test_keys_warned_for_idleness_have_a_tile_under_the_policy(client, owner, workspace):
    assert "idle-warned" not in [
        c.slug for c in client.get("/integrations/api/health/").context["checks"]
    ]
    Workspace.objects.filter(pk=workspace.pk).update(key_idle_days=30)
    start = timezone.now()
    make_key(user=owner, name="Nightly export")
    with time_machine.travel(start + timedelta(days=24), tick=False):
        client.force_login(owner)
        assert tile(client, "idle-warned") == 0  # idle, not warned yet
        idle_keys_job()
        assert tile(client, "idle-warned") == 1
