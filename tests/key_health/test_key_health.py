"""Key health (docs/product.md §13): each count on the page is the number of rows the inventory
shows behind its link, on the same data; one test per count."""

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions
from apps.audit.services import Actor
from apps.service_accounts.services import service_account_create, service_account_key_create
from apps.workspaces.models import ServiceAccount, Workspace
from tests.factories import make_key

pytestmark = pytest.mark.django_db
PAGE = "/integrations/api/health/"
CHECKS = (
    "idle-90",
    "idle-30",
    "write-unrestricted",
    "unused-scopes",
    "no-expiry",
    "expiring",
    "pending",
)


def age(created, *, days, used_days_ago=None):
    """Move a key's creation (and last use) into the past, as time would."""
    now = timezone.now()
    ApiKey.objects.filter(pk=created.key.pk).update(
        created_at=now - timedelta(days=days),
        last_used_at=None if used_days_ago is None else now - timedelta(days=used_days_ago),
    )


@pytest.fixture
def keys(owner, admin, workspace):
    """A workspace where every check finds a different number of keys."""
    for n in range(3):  # idle 90+ (and so 30+), never expiring
        age(make_key(user=owner, name=f"ancient {n}", expires_in=None), days=200)
    age(make_key(user=owner, name="idle 40", scopes=["pages:read"]), days=40, used_days_ago=40)
    age(make_key(user=owner, name="busy", scopes=["pages:read"]), days=60, used_days_ago=0)
    make_key(user=owner, name="soon", expires_in=timedelta(days=3), scopes=["pages:read"])
    make_key(
        user=owner,
        name="narrow writer",
        scopes=["pages:write"],
        restrictions=Restrictions(networks=("10.0.0.0/8",)),
    )
    Workspace.objects.filter(pk=workspace.pk).update(key_approval="all")
    make_key(user=admin, name="waiting", scopes=["pages:read"])
    make_key(user=admin, name="waiting too", scopes=["pages:read"])


def tiles(client):
    page = client.get(PAGE).content.decode()
    found = re.findall(
        r'<a class="health-tile[^"]*" href="([^"]+)" data-testid="health-([\w-]+)">\s*'
        r'<span class="count">([\d,]+)</span>',
        page,
    )
    return {
        slug: (href.replace("&amp;", "&"), int(count.replace(",", "")))
        for href, slug, count in found
    }


def inventory_rows(client, href):
    query = href.split("?", 1)[1]
    export = client.get(f"/integrations/api/export.csv?{query}")
    content = b"".join(export.streaming_content).decode()
    return len(list(csv.reader(io.StringIO(content)))) - 1


@pytest.mark.parametrize("check", CHECKS)
def test_each_count_is_the_number_of_keys_its_link_lists(client, keys, check):
    href, count = tiles(client)[check]
    assert href.startswith("/integrations/api/?")
    assert count == inventory_rows(client, href)
    assert count > 0, "the data gives every check something to find"


def test_the_counts_tell_the_checks_apart(client, keys):
    counts = {slug: count for slug, (_, count) in tiles(client).items()}
    assert counts["idle-90"] == 3 and counts["idle-30"] == 4
    assert counts["pending"] == 2 and counts["expiring"] == 1


def test_service_accounts_unused_for_30_days_link_to_those_accounts(client, owner, workspace):
    quiet = service_account_create(workspace=workspace, name="Quiet", actor=Actor.of_user(owner))
    busy = service_account_create(workspace=workspace, name="Busy", actor=Actor.of_user(owner))
    used = service_account_key_create(
        account=busy, name="k", scopes=["pages:read"], expires_at=None, actor=Actor.of_user(owner)
    )
    ApiKey.objects.filter(pk=used.key.pk).update(last_used_at=timezone.now())
    assert tiles(client)["unused-service-accounts"][1] == 0  # both made a minute ago
    ServiceAccount.objects.update(created_at=timezone.now() - timedelta(days=31))
    href, count = tiles(client)["unused-service-accounts"]
    assert count == 1
    listed = client.get(href).content.decode()
    assert quiet.name in listed and "Busy" not in listed


def test_an_empty_workspace_is_all_clear(client, owner):
    page = client.get(PAGE).content.decode()
    assert "All clear" in page
    assert all(count == 0 for _, count in tiles(client).values())
