"""`gatehouse`: log in by device authorization (RFC 8628), then use the workspace API.

login, logout and whoami are written here; every command for an API operation is made from
the server's operation table (commands.py), so the terminal follows the API by itself.
"""

import platform
import sys
import time
import webbrowser
from datetime import UTC, datetime, timedelta
from typing import Any

import click

from . import __version__, api, config
from .api import CliError, oauth_result, output, send
from .auth import auth, local_time, whoami_spec
from .commands import TABLE, add_operation_commands, run_operation
from .text import record_text

LOGIN = TABLE["login"]
SCOPES: list[str] = TABLE["scopes"]
DEFAULT_SCOPES: list[str] = TABLE["defaultScopes"]


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


@cli.command()
@click.option(
    "--scopes",
    default=",".join(DEFAULT_SCOPES),
    show_default=True,
    help="Comma-separated scopes to ask for; you may narrow them when approving.",
)
@click.option("--no-browser", is_flag=True, help="Do not try to open the approval page.")
@click.option("--url", "login_url", help="The server to log in to (same as gatehouse --url).")
@click.option(
    "--insecure-storage",
    is_flag=True,
    help="Keep the key in a file readable by you alone (mode 0600), not the system keychain.",
)
@click.option(
    "--secure-storage",
    is_flag=True,
    help="Keep the key in the system keychain or nowhere: refuse the file fallback "
    "(as GATEHOUSE_REQUIRE_KEYCHAIN=1 does).",
)
@click.pass_context
def login(
    ctx: click.Context,
    scopes: str,
    no_browser: bool,
    login_url: str | None,
    insecure_storage: bool,
    secure_storage: bool,
) -> None:
    """Log in through the browser; stores a key tagged CLI that lives 90 days, in the system
    keychain when one answers within 3 seconds (else, saying so, in a 0600 file; never with
    --secure-storage or GATEHOUSE_REQUIRE_KEYCHAIN=1)."""
    secure = secure_storage or config.keychain_required()
    if secure and insecure_storage:
        why = "--secure-storage" if secure_storage else "GATEHOUSE_REQUIRE_KEYCHAIN=1"
        raise CliError(f"--insecure-storage asks for the file that {why} refuses; drop one.")
    if secure:
        config.check_keychain()  # before the browser: a login that could not be kept is wasted
    if login_url:
        ctx.obj["url"] = login_url.rstrip("/")
    requested = [s.strip() for s in scopes.replace(" ", ",").split(",") if s.strip()]
    unknown = [s for s in requested if s not in SCOPES]
    if unknown:
        raise CliError(f"Unknown scope {unknown[0]}; choose from {', '.join(SCOPES)}.")
    url, credentials = ctx.obj["url"], ctx.obj["credentials"]
    device_name = f"CLI on {platform.node() or 'this computer'}"[:100]  # the key's name
    try:
        response = send(
            "POST",
            f"{url}{LOGIN['deviceCode']}",
            data={
                "client_id": LOGIN["clientId"],
                "scope": " ".join(requested),
                "installation_id": config.installation_id(credentials),
                "device_name": device_name,
            },
        )
    except CliError as error:
        raise CliError(
            f"{error.message} Is Gatehouse running at {url}? Give its address with "
            "`gatehouse login --url URL` (or GATEHOUSE_URL), as the browser shows it.",
            error.reason,
        ) from None
    grant = oauth_result(response)
    click.echo(f"First copy your one-time code: {grant['user_code']}", err=True)
    click.echo(f"Then open {grant['verification_uri']} and enter it.", err=True)
    if not no_browser:
        try:
            webbrowser.open(grant["verification_uri_complete"])
        except webbrowser.Error:
            pass
    click.echo("Waiting for approval in the browser (Ctrl+C to cancel) ...", err=True)
    token = _poll(url, grant)
    credentials.url, credentials.key_name = url, device_name
    lifetime = timedelta(seconds=int(token.get("expires_in", 0)))
    credentials.key_expires_at = (datetime.now(UTC) + lifetime).isoformat(timespec="seconds")
    try:
        notice = config.keep_key(
            credentials, token["access_token"], insecure=insecure_storage, secure=secure
        )
    except config.ConfigError:
        # Nowhere allowed to keep it: the new key is revoked at once rather than left working.
        send(
            "POST",
            f"{url}{LOGIN['revoke']}",
            data={"token": token["access_token"], "client_id": LOGIN["clientId"]},
        )
        raise
    if notice:
        click.echo(notice, err=True)
    ctx.obj["url"] = url
    workspace = run_operation(ctx, whoami_spec(), {})
    replaced = token.get("replaced_keys") or []
    replaces = (
        f" It replaces this computer's earlier CLI key {', '.join(replaced)}, now revoked."
        if replaced
        else ""
    )
    output(
        ctx,
        {"workspace": workspace, "keptIn": credentials.kept_in, "replacedKeys": replaced},
        f"Logged in (scopes: {token['scope']}). The key is kept in {credentials.kept_in}."
        f"{replaces}\n" + record_text(workspace),
    )


def _poll(url: str, grant: dict[str, Any]) -> dict[str, Any]:
    interval = int(grant.get("interval", 5))
    deadline = time.monotonic() + int(grant.get("expires_in", 900))
    while time.monotonic() < deadline:
        time.sleep(interval)
        response = send(
            "POST",
            f"{url}{LOGIN['token']}",
            data={
                "grant_type": LOGIN["grantType"],
                "device_code": grant["device_code"],
                "client_id": LOGIN["clientId"],
            },
        )
        if response.is_success:
            return dict(response.json())
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
    key = config.stored_key(credentials)
    if not key:
        raise CliError("Not logged in.")
    response = send(
        "POST",
        f"{ctx.obj['url']}{LOGIN['revoke']}",
        data={"token": key, "client_id": LOGIN["clientId"]},
    )
    if not response.is_success:
        raise CliError(f"The server did not revoke the key ({response.status_code}); it is kept.")
    config.forget_key(credentials)
    output(ctx, {"revoked": True}, "Logged out: the key is revoked and deleted.")


@cli.command()
@click.pass_context
def whoami(ctx: click.Context) -> None:
    """Who the key acts as, in which workspace, with which scopes."""
    data = run_operation(ctx, whoami_spec(), {})
    credentials = ctx.obj["credentials"]
    key = config.effective_key(credentials) or ""
    about = {"server": ctx.obj["url"], "key": f"{key[:4]}…{key[-4:]}"}
    if key == credentials.api_key and credentials.key_expires_at:  # the key of the last login
        about["keyName"] = credentials.key_name or ""
        about["keyExpires"] = local_time(credentials.key_expires_at)
    output(ctx, {**data, **about}, record_text({**data, **about}))


cli.add_command(auth)
add_operation_commands(cli)


def main() -> None:
    """The console script: no traceback ever reaches the user."""
    args = sys.argv[1:]
    if "--json" in args:  # accepted anywhere on the line, as people type it
        args = ["--json", *(arg for arg in args if arg != "--json")]
        api.JSON_ERRORS = True
    try:
        code = cli(args, standalone_mode=False)  # ctx.exit(N) returns N here
        if isinstance(code, int) and code:
            sys.exit(code)
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
