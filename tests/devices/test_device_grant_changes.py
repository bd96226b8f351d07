"""A device login approved on /device, then overtaken by a change before the CLI polls: the
poll answers RFC 8628's `access_denied` (never a 500) and the grant ends."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.devices.models import DeviceAuthorization
from apps.workspaces.choices import KeyApproval
from apps.workspaces.models import Membership, Workspace
from tests.client import Client
from tests.devices.test_device_grant import approve, poll, start
from tests.factories import MembershipFactory, WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db


def _approved_login(role: str, scopes=("products:read", "pages:write", "keys:read")):
    workspace = WorkspaceFactory(name="Acme")
    owner = owner_of(workspace)
    approver = (
        owner
        if role == Membership.Role.OWNER
        else MembershipFactory(workspace=workspace, role=role).user
    )
    browser = Client()
    browser.force_login(approver)
    cli = Client()
    body = start(cli, scope=" ".join(scopes)).json()
    assert approve(browser, body["user_code"], workspace, scopes).status_code == 200
    return workspace, approver, cli, body["device_code"]


def _polls(cli, device_code, times=2):
    answers = []
    for step in range(times):
        with time_machine.travel(timezone.now() + timedelta(seconds=6 * (step + 1))):
            answers.append(poll(cli, device_code))
    return answers


@pytest.mark.parametrize("policy", [KeyApproval.WRITE, KeyApproval.ALL])
def test_an_approval_policy_switched_on_after_approval_denies_the_poll(policy):
    workspace, admin, cli, device_code = _approved_login(
        Membership.Role.ADMIN, scopes=("products:read", "pages:write")
    )
    Workspace.objects.filter(pk=workspace.pk).update(key_approval=policy)
    for answer in _polls(cli, device_code):
        assert answer.status_code == 400, answer.content
        assert answer.json()["error"] == "access_denied"
    assert not ApiKey.objects.filter(user=admin).exists()
    assert DeviceAuthorization.objects.get().status == DeviceAuthorization.Status.DENIED


def test_the_denial_says_why():
    workspace, _admin, cli, device_code = _approved_login(
        Membership.Role.ADMIN, scopes=("products:read", "pages:write")
    )
    Workspace.objects.filter(pk=workspace.pk).update(key_approval=KeyApproval.WRITE)
    answer = _polls(cli, device_code, 1)[0]
    assert answer.json()["error"] == "access_denied"
    assert "approve" in answer.json()["error_description"]


@pytest.mark.parametrize("new_role", [Membership.Role.ADMIN, Membership.Role.MEMBER])
def test_an_owner_demoted_after_approval_under_the_policy_gets_access_denied(new_role):
    workspace, owner, cli, device_code = _approved_login(Membership.Role.OWNER)
    Workspace.objects.filter(pk=workspace.pk).update(key_approval=KeyApproval.WRITE)
    owner_of(workspace)  # someone else stays owner
    Membership.objects.filter(user=owner, workspace=workspace).update(role=new_role)
    for answer in _polls(cli, device_code):
        assert answer.status_code == 400, answer.content
        assert answer.json()["error"] == "access_denied"
    assert not ApiKey.objects.filter(user=owner).exists()


def test_an_admin_demoted_to_member_after_approving_gets_access_denied_saying_why():
    workspace, admin, cli, device_code = _approved_login(
        Membership.Role.ADMIN, scopes=("products:read", "keys:read")
    )
    Membership.objects.filter(user=admin, workspace=workspace).update(role=Membership.Role.MEMBER)
    answer = _polls(cli, device_code, 1)[0]
    assert answer.status_code == 400 and answer.json()["error"] == "access_denied"
    assert "Only owners and admins" in answer.json()["error_description"]


def test_a_login_the_policy_still_allows_mints_its_key():
    workspace, admin, cli, device_code = _approved_login(
        Membership.Role.ADMIN, scopes=("products:read", "pages:read")
    )
    Workspace.objects.filter(pk=workspace.pk).update(key_approval=KeyApproval.WRITE)
    answer = _polls(cli, device_code, 1)[0]
    assert answer.status_code == 200, answer.content
    assert ApiKey.objects.filter(user=admin, tag=ApiKey.Tag.CLI).count() == 1
