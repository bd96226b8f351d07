import re

import pytest
from django.core import mail
from django.core.management import CommandError, call_command

from apps.accounts.models import User
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.communities.models import Community, CommunityMembership
from apps.workspaces.models import Membership
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db


def test_owner_creates_a_community_and_invites_a_member_by_email(
    client, owner, django_capture_on_commit_callbacks
):
    response = client.post("/communities/", {"name": "Makers"})
    community = Community.objects.get()
    assert response["Location"] == f"/communities/{community.pk}/"
    assert community.workspace == owner.memberships.get().workspace
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(
            f"/communities/{community.pk}/", {"email": "New.Member@Example.com"}, follow=True
        ).content.decode()
    assert "Invited new.member@example.com to Makers" in page
    assert "Pending invitations" in page and "new.member@example.com" in page
    # Nothing is granted, and no account is made, until the invitation is accepted.
    assert not User.objects.filter(email="new.member@example.com").exists()
    assert not CommunityMembership.objects.exists()
    assert len(mail.outbox) == 1
    assert "Makers" in mail.outbox[0].subject
    assert re.search(r"http://testserver/invitations/\S+/", mail.outbox[0].body)


def test_inviting_an_existing_member_of_the_community_is_a_form_error(client, owner):
    community = make_community(workspace=owner.memberships.get().workspace)
    member = member_of(community)
    page = client.post(f"/communities/{community.pk}/", {"email": member.email}).content.decode()
    assert "already a member of" in page
    assert mail.outbox == []


def test_community_form_errors(client, owner):
    assert "This field is required" in client.post("/communities/", {"name": " "}).content.decode()
    community = make_community(workspace=owner.memberships.get().workspace)
    page = client.post(f"/communities/{community.pk}/", {"email": "nope"}).content.decode()
    assert "Enter a valid email address" in page


def test_removing_a_member_from_their_last_community_revokes_their_keys(client, owner):
    community = make_community(workspace=owner.memberships.get().workspace)
    member = member_of(community, email="m@acme.test")
    created = make_key(
        user=member,
        workspace=community.workspace,
        scopes=["communities:read"],
        kind=ApiKey.Kind.MEMBER,
    )
    url = f"/api/v1/communities/{community.pk}/posts"
    assert client.get(url, **auth(created.secret)).status_code == 200
    response = client.post(f"/communities/{community.pk}/members/{member.pk}/remove/", follow=True)
    assert "1 member key was revoked" in response.content.decode()
    answer = client.get("/api/v1/communities", **auth(created.secret))
    assert answer.status_code == 401 and answer.json()["error"] == "revoked-key"
    assert set(
        AuditEvent.objects.filter(workspace=community.workspace).values_list("action", flat=True)
    ) >= {"community.member_removed", "member_key.revoked"}
    assert not Membership.objects.filter(user=member).exists()
    client.force_login(member)
    assert client.get("/portal/").status_code == 403
    assert client.get("/portal/settings/developer/").status_code == 403


def test_a_member_removed_from_one_of_two_communities_keeps_the_key_for_the_other(client, owner):
    workspace = owner.memberships.get().workspace
    left, kept = make_community(workspace, "Left"), make_community(workspace, "Kept")
    member = member_of(left)
    CommunityMembership.objects.create(community=kept, user=member)
    created = make_key(
        user=member, workspace=workspace, scopes=["communities:read"], kind=ApiKey.Kind.MEMBER
    )
    client.post(f"/communities/{left.pk}/members/{member.pk}/remove/")
    answer = client.get("/api/v1/communities", **auth(created.secret))
    assert answer.status_code == 200
    assert [c["name"] for c in answer.json()["data"]] == ["Kept"]
    gone = client.get(f"/api/v1/communities/{left.pk}/posts", **auth(created.secret))
    assert gone.status_code == 404


def test_removing_a_workspace_admin_from_a_community_keeps_their_workspace_keys(client, owner):
    workspace = owner.memberships.get().workspace
    community = make_community(workspace)
    CommunityMembership.objects.create(community=community, user=owner)
    created = make_key(user=owner, workspace=workspace, scopes=["communities:read"])
    client.post(f"/communities/{community.pk}/members/{owner.pk}/remove/")
    assert client.get("/api/v1/communities", **auth(created.secret)).status_code == 200
    assert Membership.objects.filter(user=owner, role="owner").exists()


def test_another_workspaces_community_is_404(client, owner):
    theirs = make_community()
    assert client.get(f"/communities/{theirs.pk}/").status_code == 404
    member = member_of(theirs)
    assert client.post(f"/communities/{theirs.pk}/members/{member.pk}/remove/").status_code == 404
    assert CommunityMembership.objects.filter(user=member).exists()


def test_members_and_anonymous_visitors_cannot_manage_communities(client):
    community = make_community()
    client.force_login(member_of(community))
    assert client.get("/communities/").status_code == 403
    client.logout()
    assert client.get("/communities/").status_code == 302


def test_commands_create_a_community_and_add_a_member(django_capture_on_commit_callbacks):
    owner = owner_of(WorkspaceFactory())
    workspace = owner.memberships.get().workspace
    from io import StringIO

    out = StringIO()
    call_command("createcommunity", "Makers", "--workspace", str(workspace.pk), stdout=out)
    community_id = out.getvalue().strip().splitlines()[-1]
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "addcommunitymember",
            "--community",
            community_id,
            "--email",
            "m@example.com",
            stdout=StringIO(),
        )
    assert not CommunityMembership.objects.exists()  # an invitation, not a membership
    assert len(mail.outbox) == 1 and "/invitations/" in mail.outbox[0].body
    with pytest.raises(CommandError, match="No community"):
        call_command("addcommunitymember", "--community", "999", "--email", "m@example.com")
    with pytest.raises(CommandError, match="not a valid e-mail"):
        call_command("addcommunitymember", "--community", community_id, "--email", "nope")
    with pytest.raises(CommandError, match="not a workspace id"):
        call_command("createcommunity", "X", "--workspace", "nope")


def test_createapikey_mints_member_keys_for_members_only(client):
    from io import StringIO

    community = make_community()
    member = member_of(community)
    owner = owner_of(community.workspace)
    base = ["createapikey", "--workspace", str(community.workspace.pk), "--name", "k"]
    out = StringIO()
    call_command(
        *base, "--user", member.email, "--scopes", "communities:read", "--member", stdout=out
    )
    secret = out.getvalue().strip().splitlines()[-1]
    assert secret.startswith("gmk_")
    assert client.get("/api/v1/communities", **auth(secret)).status_code == 200
    with pytest.raises(CommandError, match="add --member"):
        call_command(*base, "--user", member.email, "--scopes", "communities:read")
    with pytest.raises(CommandError, match="member keys are for members"):
        call_command(*base, "--user", owner.email, "--scopes", "communities:read", "--member")
    with pytest.raises(CommandError, match="products:read"):
        call_command(*base, "--user", member.email, "--scopes", "products:read", "--member")
