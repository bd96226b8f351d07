"""What an owner's own identity provider must never reach (a security review's findings): an
account that belongs elsewhere too, another workspace through a session the provider made, an
existing account attached by SCIM, an address SCIM did not give, a suspended person's secret
lent to a hand-over's grace, and a SAML ticket finished in another browser."""

import json
import time
from datetime import timedelta

import pytest

from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.scim.tokens import scim_token_create
from apps.service_accounts.handover import key_hand_over
from apps.service_accounts.services import service_account_create
from apps.sso.gate import MADE_BY_SSO, SIGNED_IN
from apps.sso.models import SingleSignOn
from apps.workspaces.models import Membership
from apps.workspaces.services import team_suspend
from tests.client import Client
from tests.conftest import auth
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key
from tests.sso.test_oidc import ada, owner, provider, sign_in, sso, workspace  # noqa: F401
from tests.sso.test_saml import Idp, keys, post_answer  # noqa: F401
from tests.sso.test_saml import sso as saml_sso  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_provider_never_signs_in_an_account_that_is_elsewhere_too(live_server, sso, ada):  # noqa: F811
    elsewhere = WorkspaceFactory(name="Bank")
    MembershipFactory(workspace=elsewhere, user=ada, role=Membership.Role.OWNER)
    browser, refused = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert refused.status_code == 403 and "also in other workspaces" in refused.text
    assert (
        "sessionid" not in browser.cookies
        or browser.get(
            f"{live_server.url}/integrations/api/", allow_redirects=False, timeout=10
        ).status_code
        == 302
    )


def test_a_session_the_provider_made_opens_no_other_workspace(workspace, owner):  # noqa: F811
    SingleSignOn.objects.create(
        workspace=workspace, issuer="https://idp.example", client_id="x",
        client_secret_sealed="-", mode="allowed",
    )  # fmt: skip
    person = UserFactory(email="ada@acme.com")
    MembershipFactory(workspace=workspace, user=person, role=Membership.Role.ADMIN)
    browser = Client()
    browser.force_login(person)
    session = browser.session
    session[MADE_BY_SSO] = str(workspace.pk)
    session[SIGNED_IN] = {str(workspace.pk): time.time()}
    session.save()
    assert browser.get("/integrations/api/").status_code == 200
    other = WorkspaceFactory(name="Bank")
    MembershipFactory(workspace=other, user=person, role=Membership.Role.OWNER)
    browser.post("/workspace/switch/", {"workspace": str(other.pk)})
    closed = browser.get("/integrations/api/")
    assert closed.status_code == 302 and closed["Location"].startswith("/sign-in/")
    assert browser.get("/integrations/api/").status_code == 302  # signed out


def test_scim_never_attaches_an_existing_account_nor_rewrites_an_address_it_did_not_give(
    client,
    workspace,  # noqa: F811
    owner,  # noqa: F811
):
    token = scim_token_create(workspace=workspace, name="Okta", actor=Actor.of_user(owner)).secret
    someone = UserFactory(email="victim@bank.example")
    body = {"userName": "victim@bank.example", "emails": [{"value": "victim@bank.example"}]}
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    attached = client.post(
        "/scim/v2/Users", json.dumps(body), content_type="application/scim+json", **headers
    )
    assert attached.status_code == 409 and "invite them" in attached.json()["detail"]
    assert not Membership.objects.filter(workspace=workspace, user=someone).exists()
    mine = Membership.objects.get(workspace=workspace, user=owner)
    rewrite = {
        "Operations": [{"op": "replace", "path": "emails", "value": [{"value": "x@evil.example"}]}]
    }
    refused = client.patch(
        f"/scim/v2/Users/{mine.pk}", json.dumps(rewrite), content_type="application/scim+json",
        **headers,
    )  # fmt: skip
    assert refused.status_code == 400 and refused.json()["scimType"] == "mutability"
    owner.refresh_from_db()
    assert owner.email == "olga@acme.com"


def test_a_suspended_persons_secret_gets_no_grace_in_a_hand_over(client, workspace, owner):  # noqa: F811
    person = UserFactory(email="ada@acme.com")
    membership = MembershipFactory(workspace=workspace, user=person, role=Membership.Role.ADMIN)
    made = make_key(user=person, workspace=workspace)
    team_suspend(membership=membership, actor=Actor.of_identity_provider("Okta"))
    account = service_account_create(workspace=workspace, name="Sync", actor=Actor.of_user(owner))
    key = made.key
    key.refresh_from_db()
    with pytest.raises(InvalidInput, match="no grace"):
        key_hand_over(
            key=key, account=account, grace=timedelta(hours=1), actor=Actor.of_user(owner)
        )
    handed = key_hand_over(key=key, account=account, grace=timedelta(0), actor=Actor.of_user(owner))
    assert client.get("/api/v1/workspace", **auth(made.secret)).json()["error"] == "revoked-key"
    assert client.get("/api/v1/workspace", **auth(handed.secret)).status_code == 200


def test_a_saml_ticket_finishes_only_in_the_browser_that_started(client, saml_sso, ada, keys):  # noqa: F811
    idp = Idp(client, saml_sso.workspace, keys)
    answer = idp.answer(idp.ask(client))
    posted = client.post(f"/sso/saml/{saml_sso.workspace.pk}/acs", {"SAMLResponse": answer})
    assert posted.status_code == 302
    stranger = Client()  # the ticket sent to someone else's browser
    refused = stranger.get(posted["Location"])
    assert refused.status_code == 403
    assert stranger.get("/integrations/api/").status_code == 302
