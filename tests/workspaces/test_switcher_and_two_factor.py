import base64

import pytest
from allauth.mfa.totp.internal.auth import TOTP

from apps.audit.models import AuditEvent
from apps.workspaces.audit_actions import SETTINGS_CHANGED
from apps.workspaces.models import Membership
from tests.factories import MembershipFactory, WorkspaceFactory, make_community, make_key, owner_of

pytestmark = pytest.mark.django_db


def test_a_user_in_two_workspaces_switches_and_every_page_follows(client):
    older, newer = WorkspaceFactory(name="Older"), WorkspaceFactory(name="Newer")
    user = owner_of(older, email="both@example.com")
    MembershipFactory(workspace=newer, user=user, role="admin")
    make_key(user=user, workspace=older, name="Older key")
    make_key(user=user, workspace=newer, name="Newer key")
    client.force_login(user)
    page = client.get("/integrations/api/").content.decode()
    assert "Older key" in page and "Newer key" not in page
    assert "Switch workspace" in page

    response = client.post("/workspace/switch/", {"workspace": str(newer.pk)})
    assert response["Location"] == "/"
    page = client.get("/integrations/api/").content.decode()
    assert "Newer key" in page and "Older key" not in page
    assert client.get("/settings/").status_code == 403  # an admin in Newer, not an owner
    assert "Newer" in client.get("/audit/").content.decode()


def test_a_workspace_the_user_left_can_no_longer_be_chosen(client):
    mine, left = WorkspaceFactory(name="Mine"), WorkspaceFactory(name="Left")
    user = owner_of(mine)
    place = MembershipFactory(workspace=left, user=user, role="admin")
    make_key(user=user, workspace=mine, name="Mine key")
    client.force_login(user)
    client.post("/workspace/switch/", {"workspace": str(left.pk)})
    place.delete()
    page = client.get("/integrations/api/").content.decode()
    assert "Mine key" in page  # back to the workspace they still belong to
    refused = client.post("/workspace/switch/", {"workspace": str(left.pk)}, follow=True)
    assert "not in that workspace any more" in refused.content.decode()
    assert "Switch workspace" not in refused.content.decode()  # one workspace: no menu
    bad = client.post("/workspace/switch/", {"workspace": "not-a-uuid"}, follow=True)
    assert "not in that workspace any more" in bad.content.decode()


def test_a_member_of_one_workspace_and_owner_of_another_switches_to_the_portal(client):
    owned = WorkspaceFactory(name="Owned")
    community = make_community(WorkspaceFactory(name="Joined"), "Makers")
    user = owner_of(owned)
    Membership.objects.create(workspace=community.workspace, user=user, role="member")
    community.memberships.create(user=user)
    client.force_login(user)
    assert client.get("/")["Location"] == "/integrations/api/"
    client.post("/workspace/switch/", {"workspace": str(community.workspace.pk)})
    assert client.get("/")["Location"] == "/portal/"
    assert "Makers" in client.get("/portal/").content.decode()
    assert client.get("/integrations/api/").status_code == 403


def _settings_form(workspace, **changes):
    data = {
        "name": workspace.name,
        "timezone": workspace.timezone,
        "transcription_language": workspace.transcription_language,
        "default_video_quality": workspace.default_video_quality,
        "key_max_lifetime_days": workspace.key_max_lifetime_days,
        "key_allow_no_expiry": "on",
        "key_approval": "off",
    }
    data.update(changes)
    return data


def test_owners_require_two_factor_only_once_they_have_it_themselves(client):
    workspace = WorkspaceFactory(name="Acme")
    owner = owner_of(workspace)
    client.force_login(owner)
    refused = client.post("/settings/", _settings_form(workspace, require_two_factor="on"))
    assert "Add two-factor authentication to your own account first" in refused.content.decode()
    workspace.refresh_from_db()
    assert not workspace.require_two_factor

    TOTP.activate(owner, base64.b32encode(b"0123456789abcdefghij").decode())
    client.post("/settings/", _settings_form(workspace, require_two_factor="on"))
    workspace.refresh_from_db()
    assert workspace.require_two_factor
    event = AuditEvent.objects.get(action=SETTINGS_CHANGED)
    assert event.data == {"field": "require_two_factor", "before": False, "after": True}
    assert client.get("/integrations/api/").status_code == 200


def test_when_required_people_without_a_second_factor_are_sent_to_add_one(client):
    workspace = WorkspaceFactory(name="Acme", require_two_factor=True)
    admin = MembershipFactory(workspace=workspace, role="admin").user
    client.force_login(admin)
    response = client.get("/integrations/api/", follow=True)
    assert response.redirect_chain[-1][0] == "/account/2fa/"
    assert "Acme requires two-factor authentication" in response.content.decode()
    community = make_community(workspace)
    member = MembershipFactory(workspace=workspace, role="member").user
    community.memberships.create(user=member)
    client.force_login(member)
    assert client.get("/portal/")["Location"] == "/account/2fa/"
