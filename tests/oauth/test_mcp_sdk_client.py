"""Connect from an MCP client nobody here wrote: the official MCP Python SDK's OAuth client
(`mcp.client.auth`) against a live server, from the bare URL, with Chromium signed in as the
owner approving on the consent page. Both ways an app identifies itself: dynamic registration
and a client ID metadata document."""

import asyncio
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
import time_machine
from django.utils import timezone
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from apps.api_keys.models import ApiKey
from apps.oauth.models import OAuthClient, OAuthGrant
from tests.factories import PASSWORD, WorkspaceFactory, owner_of

from .documents import document_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = Path(os.environ.get("GATEHOUSE_SCREENSHOTS", "var/screenshots")).resolve()


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromiumApprover:
    """The person at the browser: opens the authorization URL the client hands over, signs
    in, looks at the consent page and presses Connect; the redirect back to the client's
    loopback address is caught and handed to the client as its callback would."""

    def __init__(
        self,
        email: str,
        redirect_uri: str,
        screenshot: str | None = None,
        untick: tuple[str, ...] = (),
    ) -> None:
        self.email = email
        self.redirect_uri = redirect_uri
        self.screenshot = screenshot
        self.untick = untick  # scopes the person takes away on the first consent page
        self.result: AuthorizationCodeResult | None = None
        self.seen: dict[str, str] = {}
        self.asked: list[str] = []  # the scope parameter of each authorization request
        self.approvals = 0

    async def redirect_handler(self, authorization_url: str) -> None:
        from playwright.async_api import async_playwright

        self.approvals += 1
        self.asked.append(parse_qs(urlsplit(authorization_url).query).get("scope", [""])[0])
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                ],
            )
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            caught: list[str] = []

            async def catch(route) -> None:
                caught.append(route.request.url)
                await route.fulfill(status=200, body="You can close this window.")

            if self.redirect_uri.startswith("http"):
                await page.route(self.redirect_uri.rsplit("/", 1)[0] + "/**", catch)
            else:
                # A native app's scheme (cursor://) is the operating system's to open: the code
                # is read where the app would get it, the Location of the consent's answer.
                async def consent_answer(route) -> None:
                    if route.request.method != "POST":
                        await route.continue_()
                        return
                    answer = await route.fetch(max_redirects=0)
                    target = answer.headers.get("location", "")
                    if target.startswith(self.redirect_uri):
                        caught.append(target)
                        await route.fulfill(status=200, body="Opening the app.")
                    else:
                        await route.fulfill(response=answer)

                await page.route("**/oauth/authorize**", consent_answer)
            await page.goto(authorization_url)  # a new browser each time: it signs in
            await page.fill("input[name=login]", self.email)
            await page.fill("input[name=password]", PASSWORD)
            await page.click("button[type=submit]")
            await page.wait_for_selector("[data-testid=client-name]")
            self.seen = {
                "client": await page.text_content("[data-testid=client-name]") or "",
                "host": await page.text_content("[data-testid=redirect-host]") or "",
                "main": await page.text_content("main") or "",
            }
            if self.approvals == 1:
                for scope in self.untick:
                    await page.uncheck(f"input[name=scopes][value='{scope}']")
            if self.screenshot:
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                await page.screenshot(path=str(SCREENSHOTS / self.screenshot), full_page=True)
            await page.click("button:has-text('Connect')")
            for _ in range(300):  # up to 30 s: the redirect waits for a loaded server
                if caught:
                    break
                await asyncio.sleep(0.1)
            await browser.close()
        assert caught, "the consent page did not send the browser back to the client"
        query = {k: v[0] for k, v in parse_qs(urlsplit(caught[0]).query).items()}
        self.result = AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def run(coroutine):
    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(asyncio.run, coroutine).result()


def provider_for(
    live_server, approver, storage, also_redirect_to: tuple[str, ...] = (), **options
) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=f"{live_server.url}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="SDK Test Client",
            redirect_uris=[approver.redirect_uri, *also_redirect_to],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=approver.redirect_handler,
        callback_handler=approver.callback_handler,
        **options,
    )


async def list_tools(live_server, provider) -> set[str]:
    # Closed at the end: a kept-alive connection would hold a live-server thread and its
    # database session past the test.
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        transport = streamable_http_client(f"{live_server.url}/mcp", http_client=http)
        async with Client(transport) as c:
            return {tool.name for tool in (await c.list_tools()).tools}


@pytest.fixture
def owner():
    if not Path(CHROMIUM).exists():
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium")
        pytest.skip(f"{CHROMIUM} is missing")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    return owner_of(WorkspaceFactory(name="Acme"), email="ada@example.com")


def test_the_sdk_connects_by_registration_refreshes_and_a_reused_token_ends_the_grant(
    live_server, owner
):
    approver = ChromiumApprover(
        owner.email, f"http://127.0.0.1:{free_port()}/callback", screenshot="45-oauth-consent.png"
    )
    storage = MemoryStorage()
    provider = provider_for(live_server, approver, storage)

    # From the bare URL: the 401 names the metadata, the client registers, the person approves.
    tools = run(list_tools(live_server, provider))
    assert {"get_workspace", "list_products", "create_page"} <= tools
    assert approver.seen["client"] == "SDK Test Client"
    assert "Unverified" in approver.seen["main"]
    assert approver.seen["host"] == urlsplit(approver.redirect_uri).netloc
    assert OAuthClient.objects.get().source == OAuthClient.Source.REGISTERED
    key = ApiKey.objects.get()
    assert key.tag == ApiKey.Tag.MCP and key.user == owner
    first = storage.tokens
    assert first is not None and first.refresh_token and first.expires_in == 3600

    # Two hours later the key has expired: the SDK refreshes, and the same key carries on.
    with time_machine.travel(timezone.now() + timedelta(hours=2), tick=True):
        assert run(list_tools(live_server, provider)) == tools
    second = storage.tokens
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token
    assert approver.approvals == 1  # no second trip through the browser
    assert ApiKey.objects.count() == 1 and OAuthGrant.objects.count() == 1

    # Someone replays the first refresh token: refused, and the grant and its key end.
    replay = httpx2.post(
        f"{live_server.url}/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first.refresh_token,
            "client_id": storage.client_info.client_id,
        },
    )
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert OAuthGrant.objects.get().revoked_at is not None
    refused = httpx2.post(
        f"{live_server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            "Authorization": f"Bearer {second.access_token}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert refused.status_code == 401 and refused.json()["error"] == "revoked-key"


def test_the_sdk_connects_with_a_client_id_metadata_document(
    live_server, owner, settings, tmp_path
):
    approver = ChromiumApprover(owner.email, f"http://127.0.0.1:{free_port()}/callback")
    with document_server(tmp_path) as documents:
        client_id = documents.url + "/oauth/client.json"
        documents.serve(
            "/oauth/client.json",
            {
                "client_id": client_id,
                "client_name": "Document Client",
                "redirect_uris": [approver.redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            },
            headers={"Cache-Control": "max-age=600"},
        )
        settings.OAUTH_DOCUMENT_CA_FILE = str(documents.ca_file)
        settings.OAUTH_DOCUMENT_ALLOW_PRIVATE = True
        storage = MemoryStorage()
        provider = provider_for(live_server, approver, storage, client_metadata_url=client_id)
        tools = run(list_tools(live_server, provider))
    assert "get_workspace" in tools
    assert approver.seen["client"] == "Document Client"
    client = OAuthClient.objects.get()
    assert client.client_id == client_id and client.source == OAuthClient.Source.DOCUMENT
    assert documents.hits.count("/oauth/client.json") == 1  # cached for the token exchange
    assert OAuthGrant.objects.get().client == client


async def call_tool(live_server, provider, name: str, arguments: dict) -> Any:
    async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
        transport = streamable_http_client(f"{live_server.url}/mcp", http_client=http)
        async with Client(transport) as c:
            return await c.call_tool(name, arguments)


def test_the_sdk_connects_with_a_native_apps_own_redirect_scheme(live_server, owner):
    """Cursor's redirect, cursor://anysphere.cursor-mcp/oauth/callback: registered with the
    loopback and https addresses Cursor sends beside it, the code read from the answer's
    Location as the operating system would hand it to the app."""
    approver = ChromiumApprover(owner.email, "cursor://anysphere.cursor-mcp/oauth/callback")
    storage = MemoryStorage()
    also = ("https://www.cursor.com/agents/mcp/oauth/callback", "http://localhost:8787/callback")
    provider = provider_for(live_server, approver, storage, also_redirect_to=also)
    tools = run(list_tools(live_server, provider))
    assert "get_workspace" in tools
    assert "returns to the app cursor" in " ".join(approver.seen["main"].split())
    assert OAuthClient.objects.get().redirect_uris[0] == approver.redirect_uri
    assert ApiKey.objects.get().tag == ApiKey.Tag.MCP


def test_the_sdk_steps_up_when_a_tool_needs_a_scope_the_person_took_away(live_server, owner):
    """MCP authorization 2025-11-25, scope challenge: the person grants read-only at first;
    the assistant still sees create_page (a client never shown a tool can never ask for it),
    calls it, gets 403 insufficient_scope naming pages:write, and the SDK asks the person
    again for what it holds plus that scope; the call then succeeds."""
    from apps.pages.models import Page

    approver = ChromiumApprover(
        owner.email,
        f"http://127.0.0.1:{free_port()}/callback",
        untick=("products:write", "communities:write", "pages:write"),
    )
    storage = MemoryStorage()
    provider = provider_for(live_server, approver, storage)
    assert "create_page" in run(list_tools(live_server, provider))
    first_key = ApiKey.objects.get()
    assert "pages:write" not in first_key.scopes and approver.approvals == 1
    page = {"title": "Hi", "slug": "hi", "body": "Hello."}
    result = run(call_tool(live_server, provider, "create_page", page))
    assert not result.is_error, result
    assert approver.approvals == 2
    assert "pages:write" in approver.asked[1].split()
    assert "pages:read" in approver.asked[1].split()  # what it held is asked for again
    assert Page.objects.get().slug == "hi"
    assert "pages:write" in ApiKey.objects.exclude(pk=first_key.pk).get().scopes


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_the_sdk_connects_at_localhost_as_well_as_at_127_0_0_1(live_server, owner, settings, host):
    """In development the issuer and the resource follow the address asked: the SDK checks
    that the protected resource names exactly the URL it was given (RFC 8707), which an
    issuer pinned to 127.0.0.1 failed for http://localhost:PORT/mcp ("Protected resource
    http://127.0.0.1:PORT/mcp does not match expected http://localhost:PORT/mcp")."""
    settings.OAUTH_ISSUER = ""
    port = urlsplit(live_server.url).port

    class At:
        url = f"http://{host}:{port}"

    approver = ChromiumApprover(owner.email, f"http://127.0.0.1:{free_port()}/callback")
    storage = MemoryStorage()
    provider = provider_for(At, approver, storage)
    assert "get_workspace" in run(list_tools(At, provider))
    assert ApiKey.objects.get().tag == ApiKey.Tag.MCP
