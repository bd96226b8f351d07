"""One rule for who may hold a key (apps/workspaces/holders.py), applied by every path that
mints one, inside the minting transaction: an active account, a place in the workspace, the role
the key's kind needs, a second factor where the workspace requires it."""

import pytest
from django.core.management import CommandError, call_command

from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_create
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership
from tests.conftest import auth
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db


def mint(workspace, user, kind=ApiKey.Kind.WORKSPACE):
    scopes = ["communities:read"]
    return api_key_create(
        workspace=workspace, user=user, name="k", scopes=scopes, expires_at=None, kind=kind
    )


def test_the_service_refuses_whoever_may_not_hold_the_key_and_mints_nothing():
    workspace = WorkspaceFactory(name="Acme")
    owner = owner_of(workspace)
    stranger = UserFactory()
    member = UserFactory()
    MembershipFactory(workspace=workspace, user=member, role=Membership.Role.MEMBER)
    disabled = owner_of(workspace)
    disabled.is_active = False
    disabled.save()

    cases = [
        (stranger, ApiKey.Kind.WORKSPACE, "This account is not in Acme."),
        (member, ApiKey.Kind.WORKSPACE, "Only owners and admins of Acme can hold its"),
        (disabled, ApiKey.Kind.WORKSPACE, "This account is disabled."),
    ]
    for user, kind, message in cases:
        with pytest.raises(InvalidInput, match=message):
            mint(workspace, user, kind)
    assert mint(workspace, member, ApiKey.Kind.MEMBER).key.kind == "member"
    workspace.require_two_factor = True
    workspace.save()
    with pytest.raises(InvalidInput, match="Acme requires two-factor authentication"):
        mint(workspace, owner)
    assert ApiKey.objects.filter(workspace=workspace).count() == 1  # the member key only


def test_post_keys_and_the_operator_command_follow_the_same_rule(client):
    workspace = WorkspaceFactory(name="Acme")
    key = make_key(workspace=workspace, scopes=["keys:write", "pages:read"])
    workspace.require_two_factor = True  # set after the key was made: it still works
    workspace.save()
    body = {"name": "bot", "scopes": ["pages:read"]}
    answer = client.post("/api/v1/keys", body, content_type="application/json", **auth(key.secret))
    assert answer.status_code == 400
    assert "Acme requires two-factor authentication" in answer.json()["message"]
    with pytest.raises(CommandError, match="Acme requires two-factor authentication"):
        call_command(
            "createapikey",
            *("--workspace", str(workspace.pk), "--user", key.key.user.email),
            *("--name", "ops", "--scopes", "pages:read"),
        )
    assert ApiKey.objects.filter(workspace=workspace).count() == 1
