"""MCP through the Node clients people run, against a live server: the official TypeScript
SDK's `auth()` through the whole Connect flow (a loopback redirect, and Cursor's own
cursor:// scheme), and mcp-remote, the stdio bridge Claude Desktop users run, with a key in a
header and signing in through the consent page itself. Chromium, signed in as the owner,
presses Connect. Installed at pinned versions by scripts/install_node_clients.sh, and run
from there (mcp-remote's own bin, as `npx mcp-remote` would, without reaching the registry).

None of these connections may leave a WARNING in the server's log for the 405 a stateless
server answers to `GET /mcp`: every Streamable HTTP client probes GET for a stream."""

import json
import logging
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from apps.api_keys.models import ApiKey
from apps.oauth.models import OAuthClient
from tests.factories import PASSWORD, WorkspaceFactory, make_key, owner_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
PREFIX = Path(os.environ.get("GATEHOUSE_NODE_CLIENTS", ROOT / "var/clients/mcp-node"))
HELPERS = Path(__file__).with_name("node")
PINNED = {"@modelcontextprotocol/sdk": "1.32.2", "mcp-remote": "0.15.1"}
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
CURSOR_CALLBACK = "cursor://anysphere.cursor-mcp/oauth/callback"
PROTOCOL_VERSION = "2025-06-18"


def unavailable(message: str) -> None:
    """Skip here; fail where the browser tests must run (GATEHOUSE_REQUIRE_BROWSER)."""
    if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def node() -> str:
    """The node executable, once the pinned clients are installed."""
    found = shutil.which("node")
    if found is None:
        unavailable("node is missing: the Node MCP client tests need Node.js 20 or later")
    for name, version in PINNED.items():
        manifest = PREFIX / "node_modules" / name / "package.json"
        installed = json.loads(manifest.read_text())["version"] if manifest.exists() else None
        if installed != version:
            unavailable(f"{name}@{version} is not in {PREFIX}: run scripts/install_node_clients.sh")
    return str(found)


@pytest.fixture
def owner(settings):
    if not Path(CHROMIUM).exists():
        unavailable(f"{CHROMIUM} is missing: apt-get install chromium")
    settings.OAUTH_ISSUER = ""  # the issuer follows the host each request came to
    return owner_of(WorkspaceFactory(name="Acme"), email="ada@example.com")


@pytest.fixture
def server_log(caplog):
    """The server's log records; the quiet answer to the GET probe is a DEBUG line."""
    caplog.set_level(logging.DEBUG, logger="apps.api")
    return caplog


def assert_the_get_probe_was_answered_quietly(caplog) -> None:
    loud = [
        f"{r.levelname} {r.name} {r.getMessage()}"
        for r in caplog.records
        if r.name == "django.request" and r.levelno >= logging.WARNING
    ]
    assert not loud, loud
    probes = [r for r in caplog.records if r.name == "apps.api" and "GET /mcp" in r.getMessage()]
    assert probes, "the client never asked GET /mcp for a stream"
    assert all(r.levelno < logging.WARNING for r in probes)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mcp_url(live_server, host: str) -> str:
    return f"http://{host}:{urlsplit(live_server.url).port}/mcp"


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def approve(
    authorization_url: str, email: str, redirect_uri: str, *, follow: bool = False
) -> tuple[str, str]:
    """`_approve` in a thread of its own: a test worker that already ran the browser tests
    holds their session-wide Playwright in this thread, and one thread runs one at a time."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(
            _approve, authorization_url, email, redirect_uri, follow=follow
        ).result()


def _approve(
    authorization_url: str, email: str, redirect_uri: str, *, follow: bool = False
) -> tuple[str, str]:
    """The person at the browser: opens the authorization URL, signs in, presses Connect.
    Returns where the consent page's answer (its 302's Location) sends the browser, and the
    text of the page the browser ends on.

    With `follow`, the browser goes there: an app listening on loopback (mcp-remote) gets its
    code. Otherwise nothing listens: a loopback address is answered here, and a native app's
    own scheme (cursor://) is the operating system's to open, which a browser cannot."""
    from playwright.sync_api import sync_playwright

    callback = urlsplit(redirect_uri)
    locations: list[str] = []
    console: list[str] = []  # a redirect the page's policy blocks is reported here

    def consent_answer(response) -> None:
        request = response.request
        if request.method == "POST" and urlsplit(response.url).path == "/oauth/authorize":
            if 300 <= response.status < 400:
                locations.append(response.headers["location"])

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            page.on("response", consent_answer)
            page.on("console", lambda message: console.append(message.text))
            if callback.scheme == "http" and not follow:
                page.route(
                    f"{callback.scheme}://{callback.netloc}/**",
                    lambda route: route.fulfill(status=200, body="You can close this window."),
                )
            page.goto(authorization_url)
            page.fill("input[name=login]", email)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_selector("[data-testid=client-name]")
            page.click("button:has-text('Connect')")
            deadline = time.monotonic() + 30
            while not locations and time.monotonic() < deadline:
                if any("has been blocked" in line for line in console):
                    break
                page.wait_for_timeout(100)
            assert locations, "Connect did not send the browser back to the app:\n" + "\n".join(
                console
            )
            if follow:
                page.wait_for_url(f"{redirect_uri}**")
                page.wait_for_load_state()
            text = page.text_content("body") or ""
        finally:
            browser.close()
    return locations[0], text


def run_node(*args: str, timeout: int = 120) -> list[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"exit {result.returncode}:\n{output[-4000:]}"
    return result.stdout.splitlines()


def printed(lines: list[str], label: str) -> str:
    found = [line.removeprefix(label + " ") for line in lines if line.startswith(label + " ")]
    assert len(found) == 1, f"expected one {label} line in:\n" + "\n".join(lines)
    return found[0]


@pytest.mark.parametrize(
    "redirect", ["loopback", "cursor"], ids=["loopback-redirect", "cursor-scheme-redirect"]
)
def test_the_typescript_sdk_connects_with_auth_and_the_consent_page(
    live_server, owner, node, server_log, tmp_path, redirect
):
    redirect_uri = (
        f"http://127.0.0.1:{free_port()}/callback" if redirect == "loopback" else CURSOR_CALLBACK
    )
    server_url = f"{live_server.url}/mcp"
    state = tmp_path / "provider.json"
    script = str(HELPERS / "sdk_client.mjs")
    client = (node, script, str(PREFIX), str(state), server_url, redirect_uri)

    # First run: the 401 names the metadata, auth() registers the app and asks for a redirect.
    started = run_node(*client, "start")
    challenge = json.loads(printed(started, "CHALLENGE"))
    assert challenge["resourceMetadataUrl"] == (
        f"{live_server.url}/.well-known/oauth-protected-resource/mcp"
    )
    assert "pages:read" in challenge["scope"].split()
    assert printed(started, "RESULT") == "REDIRECT"
    authorization_url = printed(started, "AUTHORIZATION_URL")
    asked = query_of(authorization_url)
    assert urlsplit(authorization_url).path == "/oauth/authorize"
    assert asked["redirect_uri"] == redirect_uri and asked["code_challenge_method"] == "S256"
    assert asked["resource"] == server_url
    assert OAuthClient.objects.get().redirect_uris == [redirect_uri]

    location, _ = approve(authorization_url, owner.email, redirect_uri)
    assert location.startswith(redirect_uri + "?"), location
    answer = query_of(location)
    assert answer["state"] == asked["state"] and answer["iss"] == live_server.url

    # Second run, as the app's callback: the code for tokens, then the tools.
    finished = run_node(*client, "finish", location)
    assert printed(finished, "RESULT") == "AUTHORIZED"
    tools = set(json.loads(printed(finished, "TOOLS")))
    assert {"get_workspace", "list_products", "create_page"} <= tools
    key = ApiKey.objects.get()
    assert key.tag == ApiKey.Tag.MCP and key.user == owner
    kept = json.loads(state.read_text())
    assert kept["tokens"]["refresh_token"] and kept["tokens"]["expires_in"] == 3600
    assert_the_get_probe_was_answered_quietly(server_log)


class Bridge:
    """mcp-remote as Claude Desktop runs it: a child process speaking newline-delimited
    JSON-RPC on its stdin and stdout, logging on stderr. Its home (where it keeps tokens, in
    ~/.mcp-auth) is the test's; BROWSER=true stands in for opening a browser. Unless it
    `signs_in`, asking for a sign-in is a failure at once (a key in a header was refused)."""

    def __init__(self, node: str, args: list[str], home: Path, signs_in: bool = False) -> None:
        self.signs_in = signs_in
        env = {
            **os.environ,
            "HOME": str(home),
            "MCP_REMOTE_CONFIG_DIR": str(home / ".mcp-auth"),
            "BROWSER": "true",
        }
        for name in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS"):
            env.pop(name, None)
        self.process = subprocess.Popen(
            [node, str(PREFIX / "node_modules/mcp-remote/dist/proxy.js"), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=home,
        )
        self.messages: queue.Queue[dict] = queue.Queue()
        self.noise: list[str] = []  # stdout lines that are not JSON-RPC: a stdio client chokes
        self.log: list[str] = []
        self.next_id = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                self.noise.append(line)

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.log.append(line.rstrip("\n"))

    def logged(self) -> str:
        return "\n".join(self.log[-80:])

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict, timeout: float = 60) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.answer(self.next_id, timeout)

    def answer(self, request_id: int, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.messages.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.process.poll() is not None or (
                    not self.signs_in and self.asked_to_sign_in()
                ):
                    break
                continue
            if message.get("id") == request_id and "method" not in message:
                assert "error" not in message, f"{message}\n{self.logged()}"
                return message["result"]
        raise AssertionError(
            f"no answer to request {request_id} (exit {self.process.poll()}):\n{self.logged()}"
        )

    def asked_to_sign_in(self) -> bool:
        return any("/oauth/authorize?" in line for line in list(self.log))

    def authorization_url(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            for line in list(self.log):
                if "/oauth/authorize?" in line:
                    return line[line.index("http") :].strip()
            time.sleep(0.1)
        raise AssertionError(f"mcp-remote printed no authorization URL:\n{self.logged()}")

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in list(self.log)):
            assert time.monotonic() < deadline, f"never logged {text!r}:\n{self.logged()}"
            time.sleep(0.1)

    def initialize(self) -> dict:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "claude-desktop-stand-in", "version": "1.0.0"},
        }
        return self.request("initialize", params, timeout=120)

    def tool_names(self) -> set[str]:
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return {tool["name"] for tool in self.request("tools/list", {})["tools"]}

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def __enter__(self) -> "Bridge":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
        assert not self.noise, f"mcp-remote wrote non-JSON-RPC on stdout: {self.noise}"


HOSTS = pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])


@HOSTS
def test_mcp_remote_bridges_stdio_with_a_key_in_a_header(
    live_server, node, server_log, tmp_path, host
):
    secret = make_key(scopes=["pages:read"]).secret
    url = mcp_url(live_server, host)
    with Bridge(node, [url, "--header", f"Authorization: Bearer {secret}"], tmp_path) as bridge:
        initialized = bridge.initialize()
        assert initialized["serverInfo"]["name"]
        assert bridge.tool_names() == {"get_key_policy", "get_workspace", "list_pages"}
    assert "/oauth/authorize" not in bridge.logged()
    assert_the_get_probe_was_answered_quietly(server_log)


@HOSTS
def test_mcp_remote_signs_in_through_the_consent_page(
    live_server, owner, node, server_log, tmp_path, host
):
    url = mcp_url(live_server, host)
    port = free_port()
    args = [url, str(port), "--auth-timeout", "120"]
    with Bridge(node, args, tmp_path, signs_in=True) as bridge:
        authorization_url = bridge.authorization_url()
        asked = query_of(authorization_url)
        redirect_uri = f"http://localhost:{port}/oauth/callback"
        assert asked["redirect_uri"] == redirect_uri
        assert asked["resource"] == url
        assert urlsplit(authorization_url).netloc == urlsplit(url).netloc
        bridge.wait_for("Browser opened automatically.")  # BROWSER=true: no real browser
        location, page = approve(authorization_url, owner.email, redirect_uri, follow=True)
        assert location.startswith(redirect_uri + "?"), location
        assert query_of(location)["iss"] == url.removesuffix("/mcp")
        assert "successful" in page.lower(), page
        initialized = bridge.initialize()
        assert initialized["serverInfo"]["name"]
        assert {"get_workspace", "list_products", "create_page"} <= bridge.tool_names()
    key = ApiKey.objects.get()
    assert key.tag == ApiKey.Tag.MCP and key.user == owner
    assert any((tmp_path / ".mcp-auth").rglob("*tokens.json")), bridge.logged()
    assert_the_get_probe_was_answered_quietly(server_log)


def test_the_405_to_get_mcp_is_logged_at_debug_and_other_methods_still_warn(client, caplog):
    """A stateless server answers every client's GET probe 405 (Streamable HTTP allows it):
    expected, so not Django's WARNING "Method Not Allowed: /mcp". A PUT still is one."""
    caplog.set_level(logging.DEBUG, logger="apps.api")
    probe = client.get("/mcp", HTTP_ACCEPT="text/event-stream")
    assert probe.status_code == 405 and probe["Allow"] == "POST"
    assert probe.json()["error"] == "method-not-allowed"
    assert_the_get_probe_was_answered_quietly(caplog)
    caplog.clear()
    assert client.put("/mcp").status_code == 405
    assert [(r.name, r.levelname) for r in caplog.records] == [("django.request", "WARNING")]
