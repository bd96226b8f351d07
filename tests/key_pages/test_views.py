import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.workspaces.models import Membership
from tests.conftest import auth
from tests.factories import MembershipFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
LIST = "/integrations/api/"
NEW = "/integrations/api/new/"


def form_token(client) -> str:
    page = client.get(NEW).content.decode()
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def create(client, **overrides):
    data = {
        "name": "Zapier",
        "expiry": "365",
        "scopes": ["products:read"],
        "form_token": form_token(client),
    }
    data.update(overrides)
    return client.post(NEW, data)


def test_empty_state_invites_to_create_a_key(client, owner):
    page = client.get(LIST).content.decode()
    assert "No API keys yet" in page


def test_create_form_preselects_365_days(client, owner):
    page = client.get(NEW).content.decode()
    assert re.search(r'value="365"[^>]*checked', page)
    for days in ("7", "30", "60", "90", "180"):
        assert f'value="{days}"' in page
    assert 'value="never"' in page and "long-lived server integrations" in page


def test_created_key_secret_is_shown_once_and_works(client, owner):
    response = create(client, scopes=["products:read", "pages:write"])
    assert response.status_code == 200
    page = response.content.decode()
    secret = re.search(r'data-testid="new-secret">([^<]+)<', page).group(1)
    assert "will not be shown again" in page
    assert "no-store" in response["Cache-Control"]
    key = ApiKey.objects.get()
    assert (key.user, key.workspace, key.scopes) == (
        owner,
        owner.memberships.get().workspace,
        ["pages:write", "products:read"],
    )
    assert abs(key.expires_at - (timezone.now() + timedelta(days=365))) < timedelta(minutes=1)
    assert client.get("/api/v1/workspace", **auth(secret)).status_code == 200
    # Never again: not in the list, not in the session.
    assert secret not in client.get(LIST).content.decode()
    assert secret not in str(dict(client.session))


def test_resubmitting_the_form_does_not_mint_a_second_key(client, owner):
    token = form_token(client)
    data = {"name": "Zapier", "expiry": "30", "scopes": ["pages:read"], "form_token": token}
    first = client.post(NEW, data).content.decode()
    secret = re.search(r'data-testid="new-secret">([^<]+)<', first).group(1)
    again = client.post(NEW, data)
    assert again.status_code == 302
    assert ApiKey.objects.count() == 1
    assert secret not in client.get(again["Location"]).content.decode()


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"name": ""}, "Give the key a name"),
        ({"name": "   "}, "Give the key a name"),
        ({"name": "x" * 101}, "at most 100 characters"),
        ({"scopes": []}, "Choose a permission: Read, Write or Read &amp; write"),
        ({"scopes": ["admin:all"]}, "Select a valid choice"),
        ({"expiry": "5"}, "Select a valid choice"),
        ({"expiry": "custom"}, "Pick the date"),
        ({"expiry": "custom", "custom_date": "2001-01-01"}, "must be in the future"),
        ({"expiry": "custom", "custom_date": "2099-01-01"}, "at most 365 days"),
    ],
)
def test_create_form_errors_are_inline(client, owner, overrides, message):
    response = create(client, **overrides)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not ApiKey.objects.exists()


@time_machine.travel("2026-11-22 10:00:00Z", tick=False)
def test_custom_date_means_the_end_of_that_day_in_the_workspace_timezone(client, owner):
    workspace = owner.memberships.get().workspace
    workspace.timezone = "Europe/Berlin"
    workspace.save()
    create(client, expiry="custom", custom_date="2026-12-24")
    expires_at = ApiKey.objects.get().expires_at
    assert expires_at.isoformat().startswith("2026-12-24T22:59:59")


def test_no_expiry_key(client, owner):
    create(client, expiry="never")
    assert ApiKey.objects.get().expires_at is None


def test_list_shows_every_column_newest_first(client, owner):
    workspace = owner.memberships.get().workspace
    old = make_key(user=owner, workspace=workspace, name="Old", scopes=["pages:read"]).key
    ApiKey.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    make_key(user=owner, workspace=workspace, name="CLI laptop", tag="cli")
    never = make_key(user=owner, workspace=workspace, name="Forever", expires_in=None)
    page = client.get(LIST).content.decode()
    assert page.index("Forever") < page.index("CLI laptop") < page.index("Old")
    assert ">CLI<" in page
    assert "Never" in page  # expiry of "Forever" and last use of all
    assert never.key.hint in page
    assert "pages:read" in page
    assert owner.email in page
    assert "badge--active" in page


def test_expired_and_revoked_badges_and_state_filter(client, owner):
    workspace = owner.memberships.get().workspace
    make_key(user=owner, workspace=workspace, name="Fresh")
    make_key(user=owner, workspace=workspace, name="Stale", expires_in=timedelta(days=1))
    gone = make_key(user=owner, workspace=workspace, name="Gone").key
    api_key_revoke(key=gone, actor=Actor.of_user(owner))
    with time_machine.travel(timezone.now() + timedelta(days=2)):
        client.force_login(owner)  # two days idle ends a session
        page = client.get(LIST).content.decode()
        assert ">Expired<" in page and ">Revoked<" in page and ">Active<" in page
        expired = client.get(LIST + "?state=expired").content.decode()
        assert "Stale" in expired and "Fresh" not in expired and "Gone" not in expired
        revoked = client.get(LIST + "?state=revoked").content.decode()
        assert "Gone" in revoked and "Stale" not in revoked
        assert "No active keys" not in client.get(LIST + "?state=active").content.decode()


def test_list_is_paginated(client, owner):
    workspace = owner.memberships.get().workspace
    for number in range(25):
        make_key(user=owner, workspace=workspace, name=f"Key {number:02}")
    first = client.get(LIST).content.decode()
    second = client.get(LIST + "?page=2").content.decode()
    assert "Page 1 of 2" in first and "Key 24" in first and "Key 00" not in first
    assert "Key 00" in second


def test_list_never_shows_another_workspaces_keys(client, owner):
    make_key(name="Their secret integration")
    assert "Their secret integration" not in client.get(LIST).content.decode()


def test_revoke_with_htmx_returns_the_row_as_revoked(client, owner):
    created = make_key(user=owner, workspace=owner.memberships.get().workspace)
    response = client.post(
        f"/integrations/api/keys/{created.key.pk}/revoke/", HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.lstrip().startswith("<tr") and "<html" not in fragment
    assert ">Revoked<" in fragment
    api = client.get("/api/v1/workspace", **auth(created.secret))
    assert api.json()["error"] == "revoked-key"
    key = ApiKey.objects.get()
    assert key.revoked_by == owner


def test_revoke_without_javascript_confirms_then_redirects(client, owner):
    created = make_key(user=owner, workspace=owner.memberships.get().workspace)
    url = f"/integrations/api/keys/{created.key.pk}/revoke/"
    confirm = client.get(url)
    assert "cannot be undone" in confirm.content.decode()
    assert ApiKey.objects.get().revoked_at is None
    response = client.post(url, follow=True)
    assert "no longer works" in response.content.decode()
    assert ApiKey.objects.get().revoked_at is not None


def test_another_workspaces_key_is_404(client, owner):
    theirs = make_key().key
    assert client.get(f"/integrations/api/keys/{theirs.pk}/revoke/").status_code == 404
    assert client.post(f"/integrations/api/keys/{theirs.pk}/revoke/").status_code == 404
    assert ApiKey.objects.get(pk=theirs.pk).revoked_at is None


def test_admin_sees_and_revokes_every_key_of_the_workspace(client):
    workspace = WorkspaceFactory()
    owner = owner_of(workspace)
    admin = MembershipFactory(workspace=workspace, role=Membership.Role.ADMIN).user
    created = make_key(user=owner, workspace=workspace, name="Owner's key")
    client.force_login(admin)
    assert "Owner&#x27;s key" in client.get(LIST).content.decode()
    client.post(f"/integrations/api/keys/{created.key.pk}/revoke/")
    assert ApiKey.objects.get().revoked_by == admin


def test_help_has_a_curl_line_for_this_server_and_the_openapi_address(client, owner):
    make_key(user=owner, workspace=owner.memberships.get().workspace)
    page = client.get(LIST).content.decode()
    assert (
        "curl -H &quot;Authorization: Bearer $GATEHOUSE_API_KEY&quot; http://testserver/api/v1/workspace"
        in page
    )
    assert "http://testserver/api/v1/openapi.json" in page


def test_htmx_requests_need_the_csrf_token(owner):
    from tests.client import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    created = make_key(user=owner, workspace=owner.memberships.get().workspace)
    url = f"/integrations/api/keys/{created.key.pk}/revoke/"
    assert strict.post(url, HTTP_HX_REQUEST="true").status_code == 403
    strict.get(LIST)
    token = strict.cookies["csrftoken"].value
    assert strict.post(url, HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token).status_code == 200


def test_mcp_card_shows_sign_in_configurations_first_and_the_header_variant_after(client, owner):
    import html
    import json

    page = html.unescape(client.get(LIST).content.decode())
    assert "coming" not in page.lower()
    assert "gatehouse login --url http://testserver" in page

    def snippet(snippet_id):
        return re.search(rf'<code id="{snippet_id}">(.*?)</code>', page, re.S).group(1)

    # Signing in by OAuth: the URL alone, no header and no secret anywhere.
    cursor = json.loads(snippet("mcp-cursor"))["mcpServers"]["gatehouse"]
    assert cursor == {"url": "http://testserver/mcp"}
    vscode = json.loads(snippet("mcp-vscode"))["servers"]["gatehouse"]
    assert vscode == {"type": "http", "url": "http://testserver/mcp"}
    assert (
        snippet("mcp-claude-code")
        == "claude mcp add --transport http gatehouse http://testserver/mcp"
    )
    # The alternative with a key in the header.
    keyed = json.loads(snippet("mcp-cursor-key"))["mcpServers"]["gatehouse"]
    assert keyed["headers"]["Authorization"].startswith("Bearer ")
    assert "--header" in snippet("mcp-claude-code-key")
    assert page.index('id="mcp-claude-code"') < page.index('id="mcp-claude-code-key"')
    assert page.count('data-copy-target="#mcp-') == 7


def secret_on(page: str) -> str:
    return re.search(r'data-testid="new-secret">([^<]+)<', page).group(1)


def test_roll_shows_the_new_secret_once_and_the_list_says_rolling(client, owner):
    created = make_key(user=owner, workspace=owner.memberships.get().workspace, name="Zapier")
    url = f"/integrations/api/keys/{created.key.pk}/roll/"
    assert "How long may the current secret" in client.get(url).content.decode()
    response = client.post(url, {"grace": "24h"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    new_secret = secret_on(response.content.decode())
    assert new_secret != created.secret and "The old secret keeps working until" in (
        response.content.decode()
    )
    for secret in (new_secret, created.secret):
        assert client.get("/api/v1/workspace", **auth(secret)).status_code == 200
    listing = client.get("/integrations/api/").content.decode()
    assert "Rolling: old secret stops" in listing and new_secret not in listing
    assert created.key.hint not in listing  # the list shows the new secret's hint


def test_roll_without_grace_and_with_a_bad_choice(client, owner):
    created = make_key(user=owner, workspace=owner.memberships.get().workspace)
    url = f"/integrations/api/keys/{created.key.pk}/roll/"
    refused = client.post(url, {"grace": "forever"})
    assert refused.status_code == 400 and "Choose how long" in refused.content.decode()
    assert client.get("/api/v1/workspace", **auth(created.secret)).status_code == 200
    client.post(url, {"grace": "none"})
    assert client.get("/api/v1/workspace", **auth(created.secret)).status_code == 401


def test_another_workspaces_key_cannot_be_rolled(client, owner):
    theirs = make_key()
    url = f"/integrations/api/keys/{theirs.key.pk}/roll/"
    assert client.get(url).status_code == 404
    assert client.post(url, {"grace": "none"}).status_code == 404
    assert client.get("/api/v1/workspace", **auth(theirs.secret)).status_code == 200


@pytest.mark.parametrize("holder_role", [Membership.Role.OWNER, Membership.Role.ADMIN, "member"])
def test_an_admin_cannot_roll_a_teammates_key_and_receive_its_secret(client, holder_role):
    """docs/product.md §2: only the holder rolls; owners and admins revoke, never receive one."""
    from tests.factories import make_community, member_of

    workspace = WorkspaceFactory(name="Acme")
    if holder_role == "member":
        holder = member_of(make_community(workspace))
        theirs = make_key(
            user=holder, workspace=workspace, scopes=["communities:read"], kind="member"
        )
    else:
        holder = MembershipFactory(workspace=workspace, role=holder_role).user
        theirs = make_key(user=holder, workspace=workspace)
    admin = MembershipFactory(workspace=workspace, role=Membership.Role.ADMIN).user
    client.force_login(admin)
    url = f"/integrations/api/keys/{theirs.key.pk}/roll/"
    assert client.get(url).status_code == 404
    refused = client.post(url, {"grace": "1h"})
    assert refused.status_code == 404 and "new-secret" not in refused.content.decode()
    key = ApiKey.objects.get(pk=theirs.key.pk)
    assert key.secret_hash == theirs.key.secret_hash and key.rolled_at is None
    assert (
        client.get(
            "/api/v1/workspace" if holder_role != "member" else "/api/v1/communities",
            **auth(theirs.secret),
        ).status_code
        == 200
    )
    page = client.get(f"/integrations/api/keys/{theirs.key.pk}/").content.decode()
    listing = client.get("/integrations/api/?state=all").content.decode()
    assert url not in page and url not in listing  # no Roll button on another's key


def test_the_roll_service_refuses_anyone_but_the_holder():
    from django.core.exceptions import PermissionDenied

    from apps.api_keys.rolling import api_key_roll

    workspace = WorkspaceFactory()
    owners_key = make_key(user=owner_of(workspace), workspace=workspace)
    admin = MembershipFactory(workspace=workspace, role=Membership.Role.ADMIN).user
    for actor in (Actor.of_user(admin), Actor.of_operator("test")):
        with pytest.raises(PermissionDenied):
            api_key_roll(key=owners_key.key, grace=timedelta(hours=1), actor=actor)
    assert ApiKey.objects.get(pk=owners_key.key.pk).rolled_at is None


def test_a_member_rolls_their_own_member_key_in_the_portal(client):
    from tests.factories import make_community, member_of

    community = make_community()
    member = member_of(community)
    created = make_key(
        user=member,
        workspace=community.workspace,
        scopes=["communities:read"],
        kind=ApiKey.Kind.MEMBER,
    )
    client.force_login(member)
    response = client.post(
        f"/portal/settings/developer/keys/{created.key.pk}/roll/", {"grace": "1h"}
    )
    new_secret = secret_on(response.content.decode())
    assert new_secret.startswith("gmk_")
    assert client.get("/api/v1/communities", **auth(new_secret)).status_code == 200


def test_each_resource_is_one_none_read_or_read_and_write_choice(client, owner):
    page = client.get("/integrations/api/new/").content.decode()
    for group in ("products", "communities", "pages"):
        for value in ("none", "read", "write"):
            assert f'name="access_{group}" value="{value}"' in page
    assert "autofocus" in page.split('name="name"', 1)[1].split(">", 1)[0]
    assert 'aria-describedby="id_name_helptext"' in page and 'id="id_name_helptext"' in page
    response = create(
        client, scopes=[], access_products="write", access_communities="read", access_pages="none"
    )
    assert response.status_code == 200
    key = ApiKey.objects.get()
    assert key.scopes == ["communities:read", "products:read", "products:write"]


def test_the_shortcuts_fill_the_form_without_javascript_and_create_nothing(client, owner):
    page = client.post(
        "/integrations/api/new/", {"name": "", "preset": "read", "form_token": "t"}
    ).content.decode()
    assert not ApiKey.objects.exists()
    assert "Give the key a name" not in page  # filling in is not submitting
    for group in ("products", "communities", "pages"):
        assert f'name="access_{group}" value="read" checked' in page


def test_expiry_choices_show_the_date_they_end_on(client, owner):
    workspace = owner.memberships.get().workspace
    workspace.timezone = "Europe/Berlin"
    workspace.save()
    with time_machine.travel("2026-11-22 23:30:00Z", tick=False):
        page = client.get("/integrations/api/new/").content.decode()
    assert "until Dec 23, 2026" in page  # 30 days from 00:30 on Nov 23 in Berlin
    assert "Times are in Europe/Berlin" in page


def test_a_write_only_key_can_be_made_and_re_created_as_it_was(client, owner):
    """Read and/or Write: Write alone is a choice of its own, and re-create keeps it."""
    page = client.get(NEW).content.decode()
    for group in ("products", "communities", "pages"):
        assert f'name="access_{group}" value="write_only"' in page
    response = create(
        client,
        scopes=[],
        access_products="write_only",
        access_communities="write",
        access_pages="read",
    )
    assert response.status_code == 200
    key = ApiKey.objects.get()
    assert key.scopes == ["communities:read", "communities:write", "pages:read", "products:write"]
    again = client.get(f"{NEW}?from={key.pk}").content.decode()
    for group, value in (("products", "write_only"), ("communities", "write"), ("pages", "read")):
        checked = f'name="access_{group}" value="{value}" checked'
        assert checked in again, group


def test_the_cli_card_gives_an_install_that_works_without_a_checkout(client, owner):
    page = client.get(LIST).content.decode()
    assert "pipx install http://testserver/cli/gatehouse.tar.gz" in page
    assert "in a checkout" not in page
