"""The identity provider's changes through the other doors (docs/product.md §16): webhooks
carry member.suspended and member.restored with the provider as the actor; a required
workspace sends Connect to its provider and lets an owner with a second factor in by
password; `gatehouse sso show` reads it."""

import base64
import json

import pytest
from allauth.mfa.totp.internal.auth import TOTP
from django.utils import timezone

from apps.api.scopes import EVERY_SCOPE
from apps.audit.services import Actor
from apps.sso.models import SingleSignOn
from apps.webhooks.services import endpoint_create
from apps.workspaces.models import Membership
from apps.workspaces.services import team_restore, team_suspend
from tests.cli.test_cli import env, run  # noqa: F401 - the fixture
from tests.client import Client
from tests.conftest import run_tasks
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key, owner_of
from tests.oauth.helpers import authorize_url, pkce, register
from tests.webhooks.receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(workspace):
    return owner_of(workspace, email="olga@acme.com")


def required(workspace) -> SingleSignOn:
    return SingleSignOn.objects.create(
        workspace=workspace, issuer="https://idp.example", client_id="gatehouse",
        client_secret_sealed="-", mode="required", tested_at=timezone.now(),
    )  # fmt: skip


def test_webhooks_carry_suspension_and_restoration_with_the_provider_as_actor(workspace, owner):
    ada = UserFactory(email="ada@acme.com")
    membership = MembershipFactory(workspace=workspace, user=ada, role=Membership.Role.ADMIN)
    make_key(user=ada, workspace=workspace)
    okta = Actor.of_identity_provider("Okta")
    with receiver() as hooks:
        endpoint = endpoint_create(
            workspace, url=hooks.url, event_types=["member.suspended", "member.restored"],
            actor=Actor.of_user(owner),
        )  # fmt: skip
        team_suspend(membership=membership, actor=okta)
        team_restore(membership=membership, actor=okta)
        run_tasks()
        payloads = hooks.verified(endpoint.secret)
    assert [p["type"] for p in payloads] == ["member.suspended", "member.restored"]
    assert payloads[0]["data"]["actor"] == {
        "type": "identity_provider", "label": "identity provider (SCIM token Okta)", "ip": None,
    }  # fmt: skip
    assert payloads[0]["data"]["details"]["keysSuspended"] == 1
    assert payloads[1]["data"]["details"]["keysRestored"] == 1


def test_connect_in_a_required_workspace_goes_to_the_provider_first(client, workspace, owner):
    required(workspace)
    browser = Client()
    browser.force_login(owner)
    client_id = register(client)["client_id"]
    _, challenge = pkce()
    consent = browser.get(authorize_url(client_id, challenge))
    assert consent.status_code == 302
    assert consent["Location"].startswith(f"/sso/{workspace.pk}/?next=")


def test_an_owner_with_a_second_factor_keeps_the_password_way_in(workspace, owner):
    required(workspace)
    browser = Client()
    browser.force_login(owner)
    assert browser.get("/integrations/api/").status_code == 302  # no second factor: provider
    TOTP.activate(owner, base64.b32encode(b"0123456789abcdefghij").decode())
    assert browser.get("/integrations/api/").status_code == 200  # break glass
    admin = UserFactory(email="ada@acme.com")
    MembershipFactory(workspace=workspace, user=admin, role=Membership.Role.ADMIN)
    TOTP.activate(admin, base64.b32encode(b"abcdefghij0123456789").decode())
    other = Client()
    other.force_login(admin)
    assert other.get("/integrations/api/").status_code == 302  # an admin's never does


def test_gatehouse_sso_show_reads_the_workspaces_single_sign_on(env, live_server, workspace, owner):  # noqa: F811
    required(workspace)
    env.update(
        GATEHOUSE_API_KEY=make_key(user=owner, workspace=workspace, scopes=EVERY_SCOPE).secret,
        GATEHOUSE_URL=live_server.url,
    )
    shown = run(env, "--json", "sso", "show")
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert (record["protocol"], record["issuer"], record["mode"]) == (
        "oidc", "https://idp.example", "required",
    )  # fmt: skip
    assert record["redirectUri"].endswith("/sso/callback")
