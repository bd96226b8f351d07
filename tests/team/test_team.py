import re

import pytest
from django.core import mail

from apps.accounts.models import User
from apps.api_keys.audit_actions import KEY_REVOKED
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.invitations.audit_actions import INVITATION_SENT
from apps.workspaces.audit_actions import TEAM_MEMBER_REMOVED, TEAM_ROLE_CHANGED
from apps.workspaces.models import Membership
from tests.conftest import auth
from tests.factories import MembershipFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
URL = "/settings/team/"


def test_owner_invites_a_new_admin_who_gets_a_link(
    client, owner, workspace, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, {"email": "ada@acme.test", "role": "admin"})
    assert response.status_code == 302
    assert not Membership.objects.filter(user__email="ada@acme.test").exists()
    assert re.search(r"http://testserver/invitations/\S+/", mail.outbox[0].body)
    event = AuditEvent.objects.get(action=INVITATION_SENT)
    assert event.actor_user == owner and event.data == {"email": "ada@acme.test", "role": "admin"}


def test_inviting_someone_already_on_the_team_is_a_form_error(client, owner):
    response = client.post(URL, {"email": "owner@acme.test", "role": "admin"})
    assert "already on the team" in response.content.decode()


def test_role_change_and_its_event(client, owner, workspace):
    admin = MembershipFactory(workspace=workspace, role="admin")
    client.post(f"{URL}{admin.pk}/", {"role": "owner"})
    admin.refresh_from_db()
    assert admin.role == "owner"
    event = AuditEvent.objects.get(action=TEAM_ROLE_CHANGED)
    assert event.data["before"] == "admin" and event.data["after"] == "owner"


def test_the_last_owner_cannot_be_demoted_or_removed(client, owner, workspace):
    mine = owner.memberships.get()
    response = client.post(f"{URL}{mine.pk}/", {"role": "admin"}, follow=True)
    assert "needs an owner" in response.content.decode()
    response = client.post(f"{URL}{mine.pk}/", {"action": "remove"}, follow=True)
    assert "last owner" in response.content.decode()
    mine.refresh_from_db()
    assert mine.role == "owner"
    assert not AuditEvent.objects.exclude(action="account.signed_in").exists()


def test_removing_a_teammate_revokes_their_keys(client, owner, workspace):
    admin = MembershipFactory(workspace=workspace, role="admin")
    created = make_key(user=admin.user, workspace=workspace)
    client.post(f"{URL}{admin.pk}/", {"action": "remove"})
    assert not Membership.objects.filter(pk=admin.pk).exists()
    assert client.get("/api/v1/workspace", **auth(created.secret)).json()["error"] == "revoked-key"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {KEY_REVOKED, TEAM_MEMBER_REMOVED} <= actions


def test_admins_see_the_team_but_cannot_change_it(client, workspace):
    owner = owner_of(workspace)
    admin = MembershipFactory(workspace=workspace, role="admin").user
    client.force_login(admin)
    page = client.get(URL).content.decode()
    assert owner.email in page and "Add a teammate" not in page
    assert client.post(URL, {"email": "x@acme.test", "role": "owner"}).status_code == 403
    target = owner.memberships.get()
    assert client.post(f"{URL}{target.pk}/", {"role": "admin"}).status_code == 403
    assert not User.objects.filter(email="x@acme.test").exists()


def test_another_workspaces_teammate_is_404(client, owner):
    stranger = MembershipFactory(role="admin")
    assert client.post(f"{URL}{stranger.pk}/", {"action": "remove"}).status_code == 404
    assert Membership.objects.filter(pk=stranger.pk).exists()


def test_members_and_anonymous_cannot_open_the_team(client, workspace):
    member = MembershipFactory(workspace=workspace, role="member").user
    client.force_login(member)
    assert client.get(URL).status_code == 403
    client.logout()
    assert client.get(URL).status_code == 302


def test_each_user_creates_keys_only_for_themself(client, owner, workspace):
    other = MembershipFactory(workspace=workspace, role="admin").user
    page = client.get("/integrations/api/new/").content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    client.post(
        "/integrations/api/new/",
        {
            "name": "k",
            "expiry": "7",
            "scopes": ["pages:read"],
            "form_token": token,
            "user": other.pk,
        },
    )
    assert ApiKey.objects.get().user == owner


def test_no_remove_or_role_menu_is_offered_next_to_yourself(client, owner, workspace):
    from tests.factories import MembershipFactory, UserFactory

    other = UserFactory(email="admin@acme.test")
    MembershipFactory(workspace=workspace, user=other, role="admin")
    page = client.get("/settings/team/").content.decode()
    assert 'aria-label="Remove admin@acme.test"' in page
    assert f'aria-label="Remove {owner.email}"' not in page
    assert f'aria-label="Role of {owner.email}"' not in page
    assert 'aria-label="Role of admin@acme.test"' in page
