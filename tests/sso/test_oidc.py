"""Single sign-on against a real OpenID provider (npm's oidc-provider, tests/sso/oidc_rig),
driven over HTTP the way a browser goes: our start, the provider's login form, its redirect
back with a code, our callback (docs/product.md §16). Authlib checks the ID token; these tests
check what we do with it, and that what it refuses is refused."""

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests

from apps.accounts.models import User
from apps.audit.services import Actor
from apps.sso.models import SingleSignOn
from apps.sso.settings_service import sso_configure, sso_set_mode
from apps.workspaces.models import Membership
from tests.common.test_logging import _free_port
from tests.factories import PASSWORD, MembershipFactory, UserFactory, WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
RIG = ROOT / "var" / "oidc"
NODE = shutil.which("node")


class Provider:
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def configure(self, **knobs: str) -> None:
        requests.post(f"{self.issuer}/__rig/config", params=knobs, timeout=5).raise_for_status()

    def rotate(self) -> str:
        answer = requests.post(f"{self.issuer}/__rig/rotate", params={"keep": "0"}, timeout=5)
        return answer.json()["kid"]


@pytest.fixture
def provider(live_server, settings, tmp_path):
    if NODE is None or not (RIG / "node_modules" / "oidc-provider").is_dir():
        pytest.skip(
            "needs node and oidc-provider: npm install --prefix var/oidc oidc-provider@9.13.3"
        )
    shutil.copy(Path(__file__).parent / "oidc_rig" / "provider.mjs", RIG / "provider.mjs")
    settings.SITE_URL = live_server.url
    settings.SSO_ALLOW_HTTP_ISSUER = True
    port = _free_port()
    log = open(tmp_path / "provider.log", "w+")  # noqa: SIM115 - read back below
    process = subprocess.Popen(
        [NODE, "provider.mjs", f"--port={port}", "--client-id=gatehouse",
         "--client-secret=s3cret", f"--redirect-uris={live_server.url}/sso/callback"],
        cwd=RIG, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    issuer = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while f"listening on {issuer}" not in (tmp_path / "provider.log").read_text():
        assert process.poll() is None, (tmp_path / "provider.log").read_text()
        assert time.monotonic() < deadline, "the provider did not start"
        time.sleep(0.1)
    yield Provider(issuer)
    process.terminate()
    process.wait(10)
    log.close()


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(workspace):
    return owner_of(workspace, email="olga@acme.com")


@pytest.fixture
def ada(workspace):
    user = UserFactory(email="ada@acme.com")
    MembershipFactory(workspace=workspace, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def sso(provider, workspace, owner):
    configured = sso_configure(
        workspace=workspace, issuer=provider.issuer, client_id="gatehouse",
        client_secret="s3cret", actor=Actor.of_user(owner),
    )  # fmt: skip
    return sso_set_mode(sso=configured, mode="allowed", actor=Actor.of_user(owner))


def through_provider(browser: requests.Session, response: requests.Response, login: str):
    """Fill the provider's login form on `response` (if it shows one) and follow it home."""
    if "/interaction/" in response.url:
        action = re.search(r'<form[^>]*action="([^"]+)"', response.text).group(1)
        response = browser.post(
            urljoin(response.url, action),
            data={"prompt": "login", "login": login, "password": "any"},
            timeout=10,
        )
    return response


def sign_in(base: str, workspace, login: str, browser: requests.Session | None = None):
    browser = browser or requests.Session()
    started = browser.get(f"{base}/sso/{workspace.pk}/", timeout=10)
    return browser, through_provider(browser, started, login)


def password_sign_in(base: str, email: str) -> requests.Session:
    browser = requests.Session()
    page = browser.get(f"{base}/sign-in/", timeout=10)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    signed = browser.post(
        f"{base}/sign-in/",
        data={"csrfmiddlewaretoken": token, "login": email, "password": PASSWORD},
        headers={"Referer": f"{base}/sign-in/"},
        timeout=10,
    )
    assert signed.ok and "/sign-in/" not in signed.url, signed.url
    return browser


def test_a_teammate_signs_in_and_is_linked_by_the_providers_subject(live_server, sso, ada):
    _, home = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert home.status_code == 200 and "/integrations/api/" in home.url, home.url
    assert "ada@acme.com" in home.text
    assert Membership.objects.get(user=ada).sso_subject == "ada@acme.com"


def test_no_one_outside_the_team_gets_in_and_no_account_is_made(live_server, sso, ada):
    accounts = User.objects.count()
    for login in ("eve@evil.example", "ada@acme.com#unverified"):
        _, refused = sign_in(live_server.url, sso.workspace, login)
        assert refused.status_code == 403, refused.url
        assert "Single sign-on refused" in refused.text
    assert User.objects.count() == accounts
    assert Membership.objects.get(user=ada).sso_subject == ""


def test_a_wrong_nonce_and_an_expired_id_token_are_refused(live_server, provider, sso, ada):
    provider.configure(nonce="not-the-one-we-sent")
    _, refused = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert refused.status_code == 403 and "nonce" in refused.text
    provider.configure(nonce="", expired="1")
    _, refused = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert refused.status_code == 403 and "expired" in refused.text.lower()
    provider.configure(expired="0")
    _, home = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert home.status_code == 200


def test_a_key_rotation_at_the_provider_is_followed(live_server, provider, sso, ada):
    browser, home = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert home.status_code == 200
    provider.rotate()  # the old key is gone from the JWKS
    _, again = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert again.status_code == 200 and "/integrations/api/" in again.url


def test_required_needs_a_test_sign_in_then_closes_the_workspace_to_password_sessions(
    live_server, sso, owner, ada
):
    from apps.common.validation import InvalidInput

    with pytest.raises(InvalidInput, match="Test sign-in"):
        sso_set_mode(sso=sso, mode="required", actor=Actor.of_user(owner))
    olga = password_sign_in(live_server.url, "olga@acme.com")
    tested = olga.get(f"{live_server.url}/sso/{sso.workspace.pk}/?test=1", timeout=10)
    tested = through_provider(olga, tested, "olga@acme.com")
    assert tested.ok and "Test sign-in worked" in tested.text, tested.url
    sso.refresh_from_db()
    assert sso.tested_at is not None
    sso_set_mode(sso=sso, mode="required", actor=Actor.of_user(owner))

    browser = password_sign_in(live_server.url, "ada@acme.com")
    # The password session meets the provider, and comes back to where it was going.
    keys = browser.get(f"{live_server.url}/integrations/api/", timeout=10)
    assert "/interaction/" in keys.url
    keys = through_provider(browser, keys, "ada@acme.com")
    assert keys.status_code == 200 and keys.url.endswith("/integrations/api/")
    assert SingleSignOn.objects.get().mode == "required"


def test_owners_set_read_and_remove_single_sign_on_over_the_api(client, provider, workspace, owner):
    from apps.api.scopes import EVERY_SCOPE
    from tests.conftest import auth
    from tests.factories import make_key

    manager = auth(make_key(user=owner, workspace=workspace, scopes=EVERY_SCOPE).secret)
    assert client.get("/api/v1/sso", **manager).json()["mode"] == "off"
    body = {"issuer": provider.issuer, "clientId": "gatehouse", "clientSecret": "s3cret"}
    too_soon = client.put(
        "/api/v1/sso", {**body, "mode": "required"}, content_type="application/json", **manager
    )
    assert too_soon.status_code == 400 and "Test sign-in" in too_soon.json()["message"]
    made = client.put(
        "/api/v1/sso", {**body, "mode": "allowed"}, content_type="application/json", **manager
    )
    assert made.status_code == 200, made.content
    shown = client.get("/api/v1/sso", **manager).json()
    assert shown["issuer"] == provider.issuer and shown["mode"] == "allowed"
    assert "clientSecret" not in shown and "s3cret" not in json.dumps(shown)
    wrong = client.put(
        "/api/v1/sso", {**body, "issuer": "https://nothing.invalid"},
        content_type="application/json", **manager,
    )  # fmt: skip
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid-input"
    assert client.delete("/api/v1/sso", **manager).status_code == 204
    assert client.get("/api/v1/sso", **manager).json()["mode"] == "off"


def test_a_session_the_provider_made_asks_it_again_after_sso_session_hours(
    live_server, provider, sso, ada, settings
):
    import time_machine

    settings.SESSION_IDLE_TIMEOUT_SECONDS = 7 * 86400  # only the single sign-on's clock counts
    browser, home = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert home.status_code == 200
    same_day = browser.get(f"{live_server.url}/integrations/api/", timeout=10)
    assert not any(r.url.startswith(provider.issuer) for r in same_day.history)
    with time_machine.travel(time.time() + (settings.SSO_SESSION_HOURS + 1) * 3600):
        next_day = browser.get(
            f"{live_server.url}/integrations/api/", allow_redirects=False, timeout=10
        )
    assert next_day.status_code == 302
    assert next_day.headers["Location"].startswith(f"/sso/{sso.workspace.pk}/?next=")


def test_a_required_workspace_logs_the_cli_in_only_after_the_provider(client, workspace, owner):
    from django.utils import timezone

    from tests.client import Client
    from tests.devices.test_device_grant import approve, start

    SingleSignOn.objects.create(
        workspace=workspace, issuer="https://idp.example", client_id="x",
        client_secret_sealed="-", mode="required", tested_at=timezone.now(),
    )  # fmt: skip
    browser = Client()
    browser.force_login(owner)  # a password session, and no second factor: no way around
    code = start(client).json()["user_code"]
    answer = approve(browser, code, workspace)
    assert answer.status_code == 302
    assert answer["Location"].startswith(f"/sso/{workspace.pk}/?next=")
    assert browser.get("/integrations/api/")["Location"].startswith(f"/sso/{workspace.pk}/")


def test_a_suspended_teammate_is_refused_and_a_scim_provisioned_one_gets_in(live_server, sso, ada):
    from apps.scim.provisioning import user_provision
    from apps.workspaces.services import team_suspend

    team_suspend(
        membership=Membership.objects.get(user=ada), actor=Actor.of_identity_provider("Okta")
    )
    _, refused = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert refused.status_code == 403 and "suspended" in refused.text
    from scim2_models import Email
    from scim2_models import User as ScimUser

    provisioned = ScimUser(
        user_name="grace@acme.com", emails=[Email(value="grace@acme.com", primary=True)]
    )
    user_provision(
        workspace=sso.workspace, user=provisioned, actor=Actor.of_identity_provider("Okta")
    )
    _, home = sign_in(live_server.url, sso.workspace, "grace@acme.com")
    assert home.status_code == 200 and "/integrations/api/" in home.url


def test_done_when_required_sso_then_scim_suspends_restores_and_removes(
    live_server, provider, sso, owner, ada
):
    """The issue's end to end: single sign-on required after the owner's test sign-in; the
    provider's SCIM then suspends, restores and removes a teammate, and their key follows."""
    from django.utils import timezone

    from apps.audit.models import AuditEvent
    from apps.scim.tokens import scim_token_create
    from tests.factories import make_key

    SingleSignOn.objects.filter(pk=sso.pk).update(tested_at=timezone.now())
    sso.refresh_from_db()
    sso_set_mode(sso=sso, mode="required", actor=Actor.of_user(owner))
    key = make_key(user=ada, workspace=sso.workspace).secret
    token = scim_token_create(workspace=sso.workspace, name="Okta", actor=Actor.of_user(owner))
    member = f"{live_server.url}/scim/v2/Users/{Membership.objects.get(user=ada).pk}"
    scim = {"Authorization": f"Bearer {token.secret}", "Content-Type": "application/scim+json"}

    def active(value: bool) -> None:
        body = {"Operations": [{"op": "replace", "value": {"active": value}}]}
        assert requests.patch(member, json=body, headers=scim, timeout=10).status_code == 200

    def answer() -> dict:
        got = requests.get(
            f"{live_server.url}/api/v1/workspace", headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        )  # fmt: skip
        return got.json()

    assert "error" not in answer()
    active(False)
    assert answer()["error"] == "suspended-key"
    _, refused = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert refused.status_code == 403 and "suspended" in refused.text
    active(True)
    assert "error" not in answer()
    _, home = sign_in(live_server.url, sso.workspace, "ada@acme.com")
    assert home.status_code == 200
    assert requests.delete(member, headers=scim, timeout=10).status_code == 204
    assert answer()["error"] == "revoked-key"
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"member.suspended", "member.restored", "team.member_removed"} <= actions
