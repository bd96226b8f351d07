"""`gatehouse`: log in by device authorization (RFC 8628), then use the workspace API."""

import json
import platform
import sys
import time
import webbrowser
from collections.abc import Iterable
from typing import Any

import click
import httpx

from . import __version__, config

CLIENT_ID = "gatehouse-cli"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
SCOPES = (
    "products:read",
    "products:write",
    "communities:read",
    "communities:write",
    "pages:read",
    "pages:write",
)
LOGIN_AGAIN = {"expired-key", "revoked-key", "invalid-key", "missing-key"}


class CliError(click.ClickException):
    """One clear line on stderr and exit code 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


class Api:
    """The workspace API at `url`, with the key from the environment or the credentials file."""

    def __init__(self, url: str, key: str | None) -> None:
        self.url = url
        self.key = key

    def request(self, method: str, path: str, body: dict | None = None, **params: Any) -> Any:
        if not self.key:
            raise CliError("Not logged in. Run `gatehouse login` (or set GATEHOUSE_API_KEY).")
        response = _send(
            method,
            f"{self.url}/api/v1{path}",
            headers={"Authorization": f"Bearer {self.key}"},
            json=body,
            params={k: v for k, v in params.items() if v is not None},
        )
        return _api_result(response)


def _send(method: str, url: str, **kwargs: Any) -> httpx.Response:
    try:
        return httpx.request(method, url, timeout=30, **kwargs)
    except httpx.HTTPError as error:
        raise CliError(f"Cannot reach {url}: {error or type(error).__name__}.") from None


def _api_result(response: httpx.Response) -> Any:
    try:
        data = response.json()
    except ValueError:
        raise CliError(
            f"The server answered {response.status_code} without JSON; is "
            f"{response.url.copy_with(path='/')} a Gatehouse server?"
        ) from None
    if response.is_success:
        return data
    reason = data.get("error", "error") if isinstance(data, dict) else "error"
    message = data.get("message", "") if isinstance(data, dict) else ""
    if reason in LOGIN_AGAIN:
        raise CliError(f"{message} Run `gatehouse login` to log in again. ({reason})")
    raise CliError(f"{message} ({reason})")


def _table(rows: Iterable[dict], columns: list[tuple[str, str]]) -> str:
    rows = list(rows)
    if not rows:
        return "(none)"
    cells = [[str(row.get(key, "")) for key, _ in columns] for row in rows]
    widths = [max(len(title), *(len(c[i]) for c in cells)) for i, (_, title) in enumerate(columns)]
    lines = ["  ".join(title.ljust(w) for (_, title), w in zip(columns, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    return "\n".join(line.rstrip() for line in lines)


def _output(ctx: click.Context, data: Any, human: str) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False) if ctx.obj["json"] else human)


def _workspace_text(data: dict) -> str:
    return "\n".join(
        [
            f"Workspace      {data['workspaceName']} ({data['workspaceId']})",
            f"Signed in as   {data['userEmail']}",
            f"Key scopes     {' '.join(data['scopes'])}",
            f"Time zone      {data['timezone']}",
            f"Transcription  {'on' if data['autoTranscribeUploads'] else 'off'}, "
            f"language {data['transcriptionLanguage']}",
        ]
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", help="Server address as a browser sees it, e.g. http://127.0.0.1:8000.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")
@click.version_option(__version__, prog_name="gatehouse")
@click.pass_context
def cli(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """Gatehouse from the terminal: log in once, then read and change your workspace."""
    try:
        credentials = config.load()
    except config.ConfigError as error:
        raise CliError(str(error)) from None
    ctx.obj = {
        "json": as_json,
        "credentials": credentials,
        "url": config.effective_url(credentials, url),
    }


def _api(ctx: click.Context) -> Api:
    return Api(ctx.obj["url"], config.effective_key(ctx.obj["credentials"]))


@cli.command()
@click.option(
    "--scopes",
    default=",".join(SCOPES),
    show_default=True,
    help="Comma-separated scopes to ask for; you may narrow them when approving.",
)
@click.option("--no-browser", is_flag=True, help="Do not try to open the approval page.")
@click.option("--url", "login_url", help="The server to log in to (same as gatehouse --url).")
@click.pass_context
def login(ctx: click.Context, scopes: str, no_browser: bool, login_url: str | None) -> None:
    """Log in through the browser; stores a key tagged CLI that lives 90 days."""
    if login_url:
        ctx.obj["url"] = login_url.rstrip("/")
    requested = [s.strip() for s in scopes.replace(" ", ",").split(",") if s.strip()]
    unknown = [s for s in requested if s not in SCOPES]
    if unknown:
        raise CliError(f"Unknown scope {unknown[0]}; choose from {', '.join(SCOPES)}.")
    url, credentials = ctx.obj["url"], ctx.obj["credentials"]
    response = _send(
        "POST",
        f"{url}/oauth/device/code",
        data={
            "client_id": CLIENT_ID,
            "scope": " ".join(requested),
            "installation_id": config.installation_id(credentials),
            "device_name": f"CLI on {platform.node() or 'this computer'}"[:100],
        },
    )
    grant = _oauth_result(response)
    click.echo(f"First copy your one-time code: {grant['user_code']}", err=True)
    click.echo(f"Then open {grant['verification_uri']} and enter it.", err=True)
    if not no_browser:
        try:
            webbrowser.open(grant["verification_uri_complete"])
        except webbrowser.Error:
            pass
    click.echo("Waiting for approval in the browser (Ctrl+C to cancel) ...", err=True)
    token = _poll(url, grant)
    credentials.url, credentials.api_key = url, token["access_token"]
    path = config.save(credentials)
    workspace = Api(url, credentials.api_key).request("GET", "/workspace")
    _output(
        ctx,
        {"workspace": workspace, "credentials": str(path)},
        f"Logged in to {workspace['workspaceName']} as {workspace['userEmail']} "
        f"(scopes: {token['scope']}). The key is stored in {path}.",
    )


def _oauth_result(response: httpx.Response) -> dict:
    try:
        data = response.json()
    except ValueError:
        raise CliError(
            f"The server answered {response.status_code} without JSON; is this a Gatehouse server?"
        ) from None
    if response.is_success:
        return data
    raise CliError(f"Login refused: {data.get('error_description') or data.get('error')}.")


def _poll(url: str, grant: dict) -> dict:
    interval = int(grant.get("interval", 5))
    deadline = time.monotonic() + int(grant.get("expires_in", 900))
    while time.monotonic() < deadline:
        time.sleep(interval)
        response = _send(
            "POST",
            f"{url}/oauth/token",
            data={
                "grant_type": DEVICE_GRANT,
                "device_code": grant["device_code"],
                "client_id": CLIENT_ID,
            },
        )
        if response.is_success:
            return response.json()
        error = (
            response.json().get("error")
            if "json" in response.headers.get("content-type", "")
            else None
        )
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += 5
            continue
        if error == "access_denied":
            raise CliError("The login was denied in the browser.")
        if error == "expired_token":
            raise CliError("The code expired before it was approved. Run `gatehouse login` again.")
        raise CliError(f"Login failed: {error or response.status_code}.")
    raise CliError("The code expired before it was approved. Run `gatehouse login` again.")


@cli.command()
@click.pass_context
def logout(ctx: click.Context) -> None:
    """Revoke this computer's key on the server and delete it here."""
    credentials = ctx.obj["credentials"]
    if not credentials.api_key:
        raise CliError("Not logged in.")
    response = _send(
        "POST",
        f"{ctx.obj['url']}/oauth/revoke",
        data={"token": credentials.api_key, "client_id": CLIENT_ID},
    )
    if not response.is_success:
        raise CliError(f"The server did not revoke the key ({response.status_code}); it is kept.")
    credentials.api_key = None
    config.save(credentials)
    _output(ctx, {"revoked": True}, "Logged out: the key is revoked and deleted.")


@cli.command()
@click.pass_context
def whoami(ctx: click.Context) -> None:
    """Who the key acts as, in which workspace, with which scopes."""
    data = _api(ctx).request("GET", "/workspace")
    _output(
        ctx,
        data,
        f"{data['userEmail']} in {data['workspaceName']} ({data['workspaceId']})\n"
        f"scopes: {' '.join(data['scopes'])}",
    )


@cli.group()
def workspace() -> None:
    """Read and change workspace settings."""


@workspace.command("get")
@click.pass_context
def workspace_get(ctx: click.Context) -> None:
    """Show the workspace's settings."""
    data = _api(ctx).request("GET", "/workspace")
    _output(ctx, data, _workspace_text(data))


@workspace.command("set")
@click.option("--name", help="The workspace's name.")
@click.option("--timezone", help="An IANA time zone, e.g. Europe/Berlin.")
@click.option("--auto-transcribe/--no-auto-transcribe", default=None, help="Transcribe uploads.")
@click.option("--language", help="Transcription language, e.g. en, de, fr.")
@click.pass_context
def workspace_set(
    ctx: click.Context,
    name: str | None,
    timezone: str | None,
    auto_transcribe: bool | None,
    language: str | None,
) -> None:
    """Change settings; only the options given are changed, all or none."""
    changes = {
        "workspaceName": name,
        "timezone": timezone,
        "autoTranscribeUploads": auto_transcribe,
        "transcriptionLanguage": language,
    }
    changes = {k: v for k, v in changes.items() if v is not None}
    if not changes:
        raise CliError(
            "Nothing to change: give --name, --timezone, --auto-transcribe or --language."
        )
    data = _api(ctx).request("PATCH", "/workspace", changes)
    _output(ctx, data, _workspace_text(data))


@cli.group()
def products() -> None:
    """List and create products."""


@products.command("list")
@click.option("--limit", type=click.IntRange(1, 100), default=None, help="At most 100.")
@click.pass_context
def products_list(ctx: click.Context, limit: int | None) -> None:
    data = _api(ctx).request("GET", "/products", limit=limit)
    columns = [
        ("id", "ID"),
        ("name", "NAME"),
        ("priceCents", "PRICE (CENTS)"),
        ("createdAt", "CREATED"),
    ]
    _output(ctx, data, _table(data["data"], columns))


@products.command("create")
@click.option("--name", required=True)
@click.option("--price-cents", type=int, required=True, help="1999 is 19.99.")
@click.pass_context
def products_create(ctx: click.Context, name: str, price_cents: int) -> None:
    data = _api(ctx).request("POST", "/products", {"name": name, "priceCents": price_cents})
    _output(ctx, data, f"Created product {data['id']}: {data['name']}")


@cli.group()
def communities() -> None:
    """List communities."""


@communities.command("list")
@click.option("--limit", type=click.IntRange(1, 100), default=None)
@click.pass_context
def communities_list(ctx: click.Context, limit: int | None) -> None:
    data = _api(ctx).request("GET", "/communities", limit=limit)
    _output(
        ctx, data, _table(data["data"], [("id", "ID"), ("name", "NAME"), ("createdAt", "CREATED")])
    )


@cli.group()
def posts() -> None:
    """List and create a community's posts."""


@posts.command("list")
@click.argument("community_id", type=click.IntRange(1))
@click.option("--limit", type=click.IntRange(1, 100), default=None)
@click.pass_context
def posts_list(ctx: click.Context, community_id: int, limit: int | None) -> None:
    data = _api(ctx).request("GET", f"/communities/{community_id}/posts", limit=limit)
    columns = [
        ("id", "ID"),
        ("title", "TITLE"),
        ("authorEmail", "AUTHOR"),
        ("createdAt", "CREATED"),
    ]
    _output(ctx, data, _table(data["data"], columns))


@posts.command("create")
@click.argument("community_id", type=click.IntRange(1))
@click.option("--title", required=True)
@click.option("--body", required=True)
@click.pass_context
def posts_create(ctx: click.Context, community_id: int, title: str, body: str) -> None:
    data = _api(ctx).request(
        "POST", f"/communities/{community_id}/posts", {"title": title, "body": body}
    )
    _output(ctx, data, f"Created post {data['id']}: {data['title']}")


@cli.group()
def pages() -> None:
    """List and create hosted pages."""


@pages.command("list")
@click.option("--limit", type=click.IntRange(1, 100), default=None)
@click.pass_context
def pages_list(ctx: click.Context, limit: int | None) -> None:
    data = _api(ctx).request("GET", "/pages", limit=limit)
    columns = [("id", "ID"), ("slug", "SLUG"), ("title", "TITLE"), ("createdAt", "CREATED")]
    _output(ctx, data, _table(data["data"], columns))


@pages.command("create")
@click.option("--title", required=True)
@click.option("--slug", required=True, help="Lower-case letters, digits and dashes.")
@click.option("--body", default="")
@click.pass_context
def pages_create(ctx: click.Context, title: str, slug: str, body: str) -> None:
    data = _api(ctx).request("POST", "/pages", {"title": title, "slug": slug, "body": body})
    _output(ctx, data, f"Created page {data['id']}: /{data['slug']}")


def main() -> None:
    """The console script: no traceback ever reaches the user."""
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Cancelled.", err=True)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except config.ConfigError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Cancelled.", err=True)
        sys.exit(130)
    except Exception as error:  # noqa: BLE001 - the promise is: no traceback, one clear line
        click.echo(f"error: {type(error).__name__}: {error}", err=True)
        sys.exit(1)
