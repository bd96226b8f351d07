"""A key's own page: what is known about it, rename and describe, least privilege."""

import html
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.metering.buffer import usage_flush
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def page_of(key) -> str:
    return f"/integrations/api/keys/{key.pk}/"


def test_the_page_shows_the_key_its_use_and_its_history(client, owner):
    created = make_key(
        user=owner, workspace=owner.memberships.get().workspace, scopes=["pages:read"]
    )
    client.get("/api/v1/pages", **auth(created.secret), REMOTE_ADDR="203.0.113.9")
    page = client.get(page_of(created.key)).content.decode()
    assert created.key.name in page and created.key.hint in page
    assert "203.0.113.9" in page  # last use from, visible without hovering
    assert "Key first used" in page and "Key created" in page
    assert created.secret not in page
    listing = client.get("/integrations/api/").content.decode()
    assert page_of(created.key) in listing


def test_rename_and_describe_are_audited_with_before_and_after(client, owner):
    created = make_key(user=owner, workspace=owner.memberships.get().workspace, name="Old")
    response = client.post(
        page_of(created.key) + "details/",
        {"name": "  Billing sync\t", "description": "Used by billing."},
    )
    assert response.status_code == 302
    key = ApiKey.objects.get(pk=created.key.pk)
    assert (key.name, key.description) == ("Billing sync", "Used by billing.")
    changes = {
        e.data["field"]: (e.data["before"], e.data["after"])
        for e in AuditEvent.objects.filter(action="key.updated")
    }
    assert changes == {"name": ("Old", "Billing sync"), "description": ("", "Used by billing.")}
    bad = client.post(page_of(created.key) + "details/", {"name": "\u202e", "description": ""})
    assert bad.status_code == 400 and "invisible formatting" in bad.content.decode()


def test_scopes_a_key_has_not_used_for_30_days_are_flagged_and_narrowed_in_one_step(client, owner):
    workspace = owner.memberships.get().workspace
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        created = make_key(
            user=owner,
            workspace=workspace,
            scopes=["pages:read", "products:read", "products:write"],
        )
    with time_machine.travel(start + timedelta(days=29), tick=False):
        client.force_login(owner)  # a session does not last a month
        assert client.get("/api/v1/pages", **auth(created.secret)).status_code == 200
        listing = client.get("/integrations/api/").content.decode()
        assert created.key.name in listing and "unused for 30 days" not in listing
    with time_machine.travel(start + timedelta(days=31), tick=False):
        client.force_login(owner)
        listing = client.get("/integrations/api/").content.decode()
        assert "2 unused for 30 days" in listing
        detail = " ".join(client.get(page_of(created.key)).content.decode().split())
        assert "Never unused" not in detail and "Never</span> <span" not in detail
        assert detail.count('<span class="badge badge--warning">never used</span>') == 2
        response = client.post(page_of(created.key) + "narrow/", {"used_only": "yes"})
        assert response.status_code == 302
    assert ApiKey.objects.get(pk=created.key.pk).scopes == ["pages:read"]
    event = AuditEvent.objects.get(action="key.narrowed")
    assert event.data == {
        "before": ["pages:read", "products:read", "products:write"],
        "after": ["pages:read"],
    }
    assert client.get("/api/v1/products", **auth(created.secret)).status_code == 403


def test_narrowing_by_hand_never_widens(client, owner):
    created = make_key(
        user=owner,
        workspace=owner.memberships.get().workspace,
        scopes=["pages:read", "pages:write"],
    )
    widen = client.post(
        page_of(created.key) + "narrow/", {"scopes": ["pages:read", "products:write"]}
    )
    assert widen.status_code == 400 and "would widen it" in widen.content.decode()
    assert ApiKey.objects.get(pk=created.key.pk).scopes == ["pages:read", "pages:write"]
    client.post(page_of(created.key) + "narrow/", {"scopes": ["pages:write"]})
    assert ApiKey.objects.get(pk=created.key.pk).scopes == ["pages:write"]
    empty = client.post(page_of(created.key) + "narrow/", {})
    assert empty.status_code == 400
    assert ApiKey.objects.get(pk=created.key.pk).scopes == ["pages:write"]


def test_scope_use_is_written_at_most_once_a_minute(client, settings, django_assert_num_queries):
    created = make_key(scopes=["pages:read"])
    client.get("/api/v1/pages", **auth(created.secret))  # first use: stamps written
    stamp = ApiKey.objects.get(pk=created.key.pk).scope_used_at("pages:read")
    assert stamp is not None and timezone.now() - stamp < timedelta(seconds=5)
    settings.USAGE_FLUSH_SECONDS = 3600  # as in production: the flush, not the request, writes
    with django_assert_num_queries(2):  # the key, the pages: nothing written by the request
        assert client.get("/api/v1/pages", **auth(created.secret)).status_code == 200
    usage_flush()  # the stamps are fresh: the flush writes only the request's count
    assert ApiKey.objects.get(pk=created.key.pk).scope_used_at("pages:read") == stamp


def test_another_workspaces_key_page_is_404(client, owner):
    theirs = make_key()
    assert client.get(page_of(theirs.key)).status_code == 404
    assert client.post(page_of(theirs.key) + "details/", {"name": "x"}).status_code == 404
    assert client.post(page_of(theirs.key) + "narrow/", {"scopes": []}).status_code == 404
    assert client.post(page_of(theirs.key)).status_code == 405  # the page itself only shows


@pytest.mark.parametrize(
    ("scopes", "summary"),
    [
        (
            [
                "products:read",
                "products:write",
                "communities:read",
                "communities:write",
                "pages:read",
                "pages:write",
            ],
            "Read & write: all resources",
        ),
        (
            [
                "products:read",
                "products:write",
                "communities:read",
                "communities:write",
                "pages:read",
                "pages:write",
                "keys:read",
                "keys:write",
            ],
            "Full access",
        ),
        (["products:read", "communities:read", "pages:read"], "Read: all resources"),
        (
            ["products:read", "communities:read", "pages:read", "keys:read"],
            "Read: all resources · API keys: Read",
        ),
        (
            ["products:read", "products:write", "pages:read"],
            "Products: Read & write · Pages: Read",
        ),
        (["communities:write"], "Communities: Write"),
    ],
)
def test_permissions_read_as_people_say_them(client, owner, scopes, summary):
    make_key(user=owner, workspace=owner.memberships.get().workspace, scopes=scopes)
    listing = client.get("/integrations/api/").content.decode()
    assert f">{html.escape(summary)}</span>" in listing


def test_the_demo_key_survives_a_restart_and_is_replaced_once_revoked(settings, tmp_path):
    """A client configured with the demo key keeps working across restarts of dev.py run; a
    revoked (or forgotten) demo key is replaced by one new key, the old ones revoked."""
    import re
    from io import StringIO

    from django.core.management import call_command

    from apps.api_keys.services import api_key_revoke
    from apps.audit.services import Actor

    settings.DEBUG = True
    settings.DEMO_KEY_FILE = str(tmp_path / "demo-key")

    def start() -> str:
        out = StringIO()
        call_command("demo", "--base-url", "http://127.0.0.1:8000", stdout=out)
        return re.search(r"Demo key:\s+(\S+)", out.getvalue()).group(1)

    first = start()
    assert start() == first  # restarted: the same key
    assert (tmp_path / "demo-key").stat().st_mode & 0o077 == 0  # the owner's eyes only
    assert ApiKey.objects.filter(name="Demo key").count() == 1
    api_key_revoke(key=ApiKey.objects.get(name="Demo key"), actor=Actor.of_operator("test"))
    second = start()
    assert second != first
    demo_keys = ApiKey.objects.filter(name="Demo key")
    assert demo_keys.count() == 2 and demo_keys.in_state("active").count() == 1
