"""The token endpoint through a client nobody here wrote: Authlib's own OAuth 2 client (on
httpx) against a live server, for the exchange, a refresh, and the RFC 6749 §5.2 errors as
that client reads them. The person's approval goes over plain HTTP with a signed-in session."""

import re
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.httpx_client import OAuth2Client

from tests.factories import PASSWORD, WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db(transaction=True)
REDIRECT = "http://127.0.0.1:33418/callback"


def csrf_of(page: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def signed_in(live_server, email: str) -> httpx.Client:
    session = httpx.Client(base_url=live_server.url, follow_redirects=False, timeout=10)
    page = session.get("/sign-in/").text
    answer = session.post(
        "/sign-in/",
        data={"login": email, "password": PASSWORD, "csrfmiddlewaretoken": csrf_of(page)},
        headers={"Referer": live_server.url + "/sign-in/"},
    )
    assert answer.status_code == 302, answer.text[:500]
    return session


def approve(session: httpx.Client, url: str, live_server) -> dict[str, str]:
    page = session.get(url)
    assert page.status_code == 200, page.text[:500]
    answer = session.post(
        url,
        data={
            "csrfmiddlewaretoken": csrf_of(page.text),
            "decision": "approve",
            "workspace": re.search(r'name="workspace" value="([^"]+)"', page.text).group(1),
            "scopes": ["products:read", "pages:read"],
        },
        headers={"Referer": url if url.startswith("http") else live_server.url + url},
    )
    assert answer.status_code == 302, answer.text[:500]
    return {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["Location"]).query).items()}


@pytest.fixture
def registered(live_server):
    answer = httpx.post(
        f"{live_server.url}/oauth/register",
        json={"client_name": "Authlib Client", "redirect_uris": [REDIRECT]},
    )
    assert answer.status_code == 201
    return answer.json()["client_id"]


def oauth_client(client_id: str) -> OAuth2Client:
    return OAuth2Client(
        client_id=client_id,
        token_endpoint_auth_method="none",
        redirect_uri=REDIRECT,
        code_challenge_method="S256",
        scope="products:read pages:read",
    )


def test_authlibs_client_exchanges_a_code_and_refreshes(live_server, registered):
    owner_of(WorkspaceFactory(name="Acme"), email="ada@example.com")
    client = oauth_client(registered)
    try:
        exchange_and_refresh(live_server, client)
    finally:
        client.close()


def exchange_and_refresh(live_server, client: OAuth2Client) -> None:
    verifier = generate_token(48)
    url, state = client.create_authorization_url(
        f"{live_server.url}/oauth/authorize",
        code_verifier=verifier,
        resource=f"{live_server.url}/mcp",
    )
    session = signed_in(live_server, "ada@example.com")
    try:
        params = approve(session, url, live_server)
    finally:
        session.close()
    assert params["state"] == state
    token = client.fetch_token(
        f"{live_server.url}/oauth/token",
        code=params["code"],
        code_verifier=verifier,
        resource=f"{live_server.url}/mcp",
    )
    assert token["token_type"] == "Bearer" and token["expires_in"] == 3600
    products = httpx.get(
        f"{live_server.url}/api/v1/products",
        headers={"Authorization": f"Bearer {token['access_token']}"},
    )
    assert products.status_code == 200
    renewed = client.refresh_token(
        f"{live_server.url}/oauth/token", refresh_token=token["refresh_token"]
    )
    assert renewed["access_token"] != token["access_token"]
    with pytest.raises(OAuthError) as reused:
        client.refresh_token(f"{live_server.url}/oauth/token", refresh_token=token["refresh_token"])
    assert reused.value.error == "invalid_grant"


@pytest.mark.parametrize(
    ("form", "error"),
    [
        (
            {"grant_type": "authorization_code", "code": "nope", "code_verifier": "v" * 43},
            "invalid_grant",
        ),
        ({"grant_type": "refresh_token"}, "invalid_request"),
        ({"grant_type": "refresh_token", "refresh_token": "grt_unknown"}, "invalid_grant"),
        ({"grant_type": "client_credentials"}, "unsupported_grant_type"),
        (
            {"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": "x"},
            "unauthorized_client",
        ),
    ],
)
def test_authlibs_client_reads_each_error_the_token_endpoint_answers(
    live_server, registered, form, error
):
    client = oauth_client(registered)
    with pytest.raises(OAuthError) as refused:
        client.fetch_token(f"{live_server.url}/oauth/token", **form)
    client.close()
    assert refused.value.error == error


def test_an_unknown_client_is_invalid_client(live_server):
    client = oauth_client("no-such-client")
    with pytest.raises(OAuthError) as refused:
        client.fetch_token(
            f"{live_server.url}/oauth/token", grant_type="refresh_token", refresh_token="grt_x"
        )
    client.close()
    assert refused.value.error == "invalid_client"


def test_authlibs_client_logs_in_by_the_device_grant_with_only_client_id_and_scope(live_server):
    """RFC 8628 as a generic client speaks it: no installation_id, no device_name. The person
    approves on /device; the key is named after the client and the address."""
    import time

    from apps.api_keys.models import ApiKey

    workspace = WorkspaceFactory(name="Acme")
    owner_of(workspace, email="ada@example.com")
    client = OAuth2Client(
        client_id="gatehouse-cli", token_endpoint_auth_method="none", scope="products:read"
    )
    try:
        discovery = f"{live_server.url}/.well-known/oauth-authorization-server"
        metadata = client.request("GET", discovery, withhold_token=True).json()
        started = client.request(
            "POST",
            metadata["device_authorization_endpoint"],
            data={"client_id": "gatehouse-cli", "scope": "products:read"},
            withhold_token=True,
        )
        assert started.status_code == 200, started.text
        login = started.json()
        session = signed_in(live_server, "ada@example.com")
        try:
            page = session.get(login["verification_uri_complete"])
            assert page.status_code == 200, page.text[:500]
            answer = session.post(
                "/device",
                data={
                    "csrfmiddlewaretoken": csrf_of(page.text),
                    "user_code": login["user_code"],
                    "decision": "approve",
                    "workspace": str(workspace.pk),
                    "scopes": ["products:read"],
                },
                headers={"Referer": login["verification_uri_complete"]},
            )
            assert answer.status_code in (200, 302), answer.text[:500]
        finally:
            session.close()
        token = None
        for _ in range(3):
            try:
                token = client.fetch_token(
                    metadata["token_endpoint"],
                    grant_type="urn:ietf:params:oauth:grant-type:device_code",
                    device_code=login["device_code"],
                )
                break
            except OAuthError as pending:  # a poll before the approval landed
                assert pending.error in ("authorization_pending", "slow_down")
                time.sleep(login["interval"])
        assert token is not None and token["token_type"] == "Bearer"
        assert token["expires_in"] == 90 * 24 * 3600
    finally:
        client.close()
    products = httpx.get(
        f"{live_server.url}/api/v1/products",
        headers={"Authorization": f"Bearer {token['access_token']}"},
    )
    assert products.status_code == 200
    key = ApiKey.objects.get(tag="cli")
    assert key.name == "Gatehouse CLI from 127.0.0.1" and key.installation_id is None
