"""Nobody joins a team or a community without accepting an invitation sent to their address."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from apps.accounts.models import User
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.communities.models import CommunityMembership
from apps.invitations.audit_actions import (
    INVITATION_ACCEPTED,
    INVITATION_SENT,
    INVITATION_WITHDRAWN,
)
from apps.invitations.models import Invitation
from apps.workspaces.models import Membership
from tests.client import Client
from tests.factories import PASSWORD, MembershipFactory, WorkspaceFactory, make_community, owner_of

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-much-longer-passphrase-7"


@pytest.fixture
def community():
    return make_community(WorkspaceFactory(name="Acme"), "Makers")


@pytest.fixture
def owner(community):
    user = owner_of(community.workspace, email="owner@acme.test")
    return user


@pytest.fixture
def owner_client(owner):
    client = Client()
    client.force_login(owner)
    return client


def invite(owner_client, community, email: str, capture) -> str:
    """Invite `email` to the community from the dashboard; the path of the e-mailed link."""
    with capture(execute=True):
        owner_client.post(f"/communities/{community.pk}/", {"email": email})
    message = [m for m in mail.outbox if m.to == [email]][-1]
    return re.search(r"http://testserver(/invitations/\S+/)", message.body).group(1)


def test_an_account_signed_up_in_advance_cannot_take_over_an_invitation(
    client, owner_client, community, django_capture_on_commit_callbacks
):
    """The reproduction of the issue: sign up as the invitee before they are invited."""
    client.post(
        "/sign-up/",
        {"email": "new.member@example.com", "password1": NEW_PASSWORD, "workspace_name": "Mine"},
    )
    invite(owner_client, community, "new.member@example.com", django_capture_on_commit_callbacks)
    squatter = User.objects.get(email="new.member@example.com")
    assert not CommunityMembership.objects.filter(user=squatter).exists()
    assert not Membership.objects.filter(user=squatter, workspace=community.workspace).exists()
    # They cannot sign in without the address either: the verification link went there.
    answer = client.post("/sign-in/", {"login": squatter.email, "password": NEW_PASSWORD})
    assert answer["Location"] == "/account/confirm-email/"
    assert client.get("/portal/")["Location"].startswith("/sign-in/")
    assert client.post("/portal/settings/developer/new/").status_code == 302
    assert not ApiKey.objects.filter(user=squatter).exists()


def test_a_new_person_signs_up_through_the_link_and_accepts(
    client, owner, owner_client, community, django_capture_on_commit_callbacks
):
    link = invite(owner_client, community, "ada@example.com", django_capture_on_commit_callbacks)
    page = client.get(link).content.decode()
    assert "owner@acme.test" in page and "a member of the community Makers in Acme" in page
    sign_up = client.get(f"/sign-up/?next={link}").content.decode()
    assert "ada@example.com" in sign_up and "Workspace name" not in sign_up
    response = client.post(
        "/sign-up/", {"email": "ada@example.com", "password1": NEW_PASSWORD, "next": link}
    )
    # Opening the e-mailed link proved the address: no second verification e-mail.
    assert response["Location"] == link
    assert not CommunityMembership.objects.exists()  # not until they accept
    accepted = client.post(link)
    assert accepted["Location"] == "/portal/"
    ada = User.objects.get(email="ada@example.com")
    assert CommunityMembership.objects.filter(community=community, user=ada).exists()
    assert Membership.objects.get(user=ada).role == "member"
    assert "Makers" in client.get("/portal/").content.decode()
    event = AuditEvent.objects.get(action=INVITATION_ACCEPTED)
    assert event.actor_user == ada and event.data["community"] == "Makers"
    assert not Membership.objects.filter(user=ada, role="owner").exists()  # no workspace of own


def test_an_existing_account_signs_in_through_the_link_and_accepts(
    client, owner_client, community, django_capture_on_commit_callbacks
):
    other = owner_of(WorkspaceFactory(name="Elsewhere"), email="grace@example.com")
    link = invite(owner_client, community, "grace@example.com", django_capture_on_commit_callbacks)
    assert not CommunityMembership.objects.filter(user=other).exists()
    client.get(link)
    signed_in = client.post(
        "/sign-in/", {"login": "grace@example.com", "password": PASSWORD, "next": link}
    )
    assert signed_in["Location"] == link
    client.post(link)
    assert CommunityMembership.objects.filter(community=community, user=other).exists()
    assert other.memberships.get(workspace__name="Elsewhere").role == "owner"  # kept


def test_the_wrong_account_is_refused(
    client, owner_client, community, django_capture_on_commit_callbacks
):
    link = invite(owner_client, community, "ada@example.com", django_capture_on_commit_callbacks)
    intruder = owner_of(email="intruder@example.com")
    client.force_login(intruder)
    page = client.get(link)
    assert page.status_code == 403
    assert "sent to <strong>ada@example.com</strong>" in page.content.decode()
    assert client.post(link).status_code == 403
    assert not CommunityMembership.objects.exists()
    assert Invitation.objects.get().state == "pending"


def test_a_link_works_once(client, owner_client, community, django_capture_on_commit_callbacks):
    link = invite(owner_client, community, "ada@example.com", django_capture_on_commit_callbacks)
    ada = owner_of(email="ada@example.com")
    client.force_login(ada)
    client.post(link)
    again = client.get(link)
    assert again.status_code == 410 and "already accepted" in again.content.decode()
    assert client.post(link).status_code == 410
    assert AuditEvent.objects.filter(action=INVITATION_ACCEPTED).count() == 1


def test_a_link_expires_after_seven_days(
    client, owner_client, community, django_capture_on_commit_callbacks
):
    link = invite(owner_client, community, "ada@example.com", django_capture_on_commit_callbacks)
    ada = owner_of(email="ada@example.com")
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        client.force_login(ada)
        page = client.get(link)
        assert page.status_code == 410 and "has expired" in page.content.decode()
        assert client.post(link).status_code == 410
    assert not CommunityMembership.objects.exists()


def test_an_unknown_link_is_a_clear_404(client):
    page = client.get("/invitations/not-a-real-token/")
    assert page.status_code == 404 and "does not work" in page.content.decode()


def test_resend_replaces_the_link_and_withdraw_kills_it(
    client, owner_client, community, django_capture_on_commit_callbacks
):
    first = invite(owner_client, community, "ada@example.com", django_capture_on_commit_callbacks)
    invitation = Invitation.objects.get()
    page = owner_client.get(f"/communities/{community.pk}/").content.decode()
    assert "Pending invitations" in page and "ada@example.com" in page
    with django_capture_on_commit_callbacks(execute=True):
        owner_client.post(f"/invitations/{invitation.pk}/resend/")
    second = re.search(r"http://testserver(/invitations/\S+/)", mail.outbox[-1].body).group(1)
    assert second != first
    assert client.get(first).status_code == 404
    assert client.get(second).status_code == 200
    owner_client.post(f"/invitations/{invitation.pk}/withdraw/")
    assert client.get(second).status_code == 410
    actions = list(
        AuditEvent.objects.filter(subject="ada@example.com")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == [INVITATION_SENT, INVITATION_SENT, INVITATION_WITHDRAWN]
    assert (
        "Pending invitations"
        not in owner_client.get(f"/communities/{community.pk}/").content.decode()
    )


def test_inviting_twice_points_to_resend(owner_client, community):
    owner_client.post(f"/communities/{community.pk}/", {"email": "ada@example.com"})
    page = owner_client.post(f"/communities/{community.pk}/", {"email": "ada@example.com"})
    assert "already has a pending invitation" in page.content.decode()
    assert Invitation.objects.count() == 1


def test_a_team_invitation_promotes_a_member_once_accepted(
    client, owner_client, community, django_capture_on_commit_callbacks
):
    member = MembershipFactory(workspace=community.workspace, role="member").user
    with django_capture_on_commit_callbacks(execute=True):
        owner_client.post("/settings/team/", {"email": member.email, "role": "admin"})
    assert Membership.objects.get(user=member).role == "member"
    link = re.search(r"http://testserver(/invitations/\S+/)", mail.outbox[-1].body).group(1)
    client.force_login(member)
    assert client.post(link)["Location"] == "/integrations/api/"
    assert Membership.objects.get(user=member).role == "admin"


def test_admins_cannot_withdraw_team_invitations(owner_client, community):
    owner_client.post("/settings/team/", {"email": "ada@example.com", "role": "admin"})
    admin = MembershipFactory(workspace=community.workspace, role="admin").user
    client = Client()
    client.force_login(admin)
    invitation = Invitation.objects.get()
    assert client.post(f"/invitations/{invitation.pk}/withdraw/").status_code == 403
    assert Invitation.objects.get().state == "pending"


def test_another_workspaces_invitation_is_404(owner_client):
    theirs = make_community(WorkspaceFactory(name="Theirs"))
    other_owner = owner_of(theirs.workspace)
    other = Client()
    other.force_login(other_owner)
    other.post(f"/communities/{theirs.pk}/", {"email": "ada@example.com"})
    invitation = Invitation.objects.get()
    assert owner_client.post(f"/invitations/{invitation.pk}/withdraw/").status_code == 404
    assert Invitation.objects.get().state == "pending"


def test_a_member_removed_from_a_community_cannot_accept_an_older_invitation_to_another(
    client, owner_client, community, django_capture_on_commit_callbacks
):
    from apps.audit.services import Actor
    from apps.communities.services import community_member_remove

    other = make_community(community.workspace, "Painters")
    first = invite(owner_client, community, "ada@example.com", django_capture_on_commit_callbacks)
    older = invite(owner_client, other, "ada@example.com", django_capture_on_commit_callbacks)
    ada = owner_of(WorkspaceFactory(name="Elsewhere"), email="ada@example.com")
    client.force_login(ada)
    client.post(first)
    assert CommunityMembership.objects.filter(user=ada, community=community).exists()
    community_member_remove(community=community, user=ada, actor=Actor.of_operator("test"))
    refused = client.post(older)
    assert refused.status_code == 410 and "withdrawn" in refused.content.decode()
    assert not CommunityMembership.objects.filter(user=ada).exists()
    assert not Membership.objects.filter(user=ada, workspace=community.workspace).exists()
    assert AuditEvent.objects.filter(action=INVITATION_WITHDRAWN).count() == 1


def test_a_teammate_removed_from_the_team_loses_their_pending_invitations(
    owner, community, django_capture_on_commit_callbacks, owner_client
):
    from apps.audit.services import Actor
    from apps.workspaces.services import team_remove

    admin = MembershipFactory(workspace=community.workspace, role="admin").user
    invite(owner_client, community, admin.email, django_capture_on_commit_callbacks)
    team_remove(membership=Membership.objects.get(user=admin), actor=Actor.of_user(owner))
    assert Invitation.objects.get().state == "withdrawn"


@pytest.mark.parametrize(
    ("role", "in_community", "place"),
    [
        ("member", True, "a member of the community Makers in Acme"),
        ("admin", False, "an admin of Acme"),
        ("owner", False, "an owner of Acme"),
    ],
)
def test_what_an_invitation_offers_reads_as_a_sentence(
    client, owner, community, django_capture_on_commit_callbacks, role, in_community, place
):
    """Every message built from the invitation's parts, read whole: the e-mail's subject and
    body, the invitation page, and the confirmation after accepting."""
    from apps.audit.services import Actor
    from apps.invitations.services import invitation_create

    with django_capture_on_commit_callbacks(execute=True):
        _, link = invitation_create(
            workspace=community.workspace,
            email="ada@example.com",
            role=role,
            actor=Actor.of_user(owner),
            base_url="http://testserver",
            community=community if in_community else None,
        )
    message = mail.outbox[-1]
    assert message.subject == f"owner@acme.test invited you to be {place}"
    assert f"owner@acme.test invited you to be {place} on Gatehouse." in message.body
    path = link.removeprefix("http://testserver")
    ada = owner_of(WorkspaceFactory(name="Elsewhere"), email="ada@example.com")
    client.force_login(ada)
    page = client.get(path).content.decode()
    assert f"invited <strong>ada@example.com</strong> to be {place}." in page
    accepted = client.post(path, follow=True).content.decode()
    assert f"You are now {place}." in accepted
