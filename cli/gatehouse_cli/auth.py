"""`gatehouse auth`: what the CLI is logged in as (status) and the key itself, for scripts
(token), as `gh auth` says them."""

import os
from datetime import datetime
from typing import Any

import click

from . import config
from .api import CliError, output
from .commands import TABLE, run_operation
from .text import record_text, relative, when


def whoami_spec() -> dict[str, Any]:
    """The operation `whoami` and `auth status` ask the server (the workspace's record)."""
    return next(spec for spec in TABLE["commands"] if spec["operation"] == TABLE["login"]["whoami"])


def local_time(iso: str) -> str:
    """A stored ISO time as the dashboard writes it, with how far ahead: Feb 28, 2027 13:57 UTC
    (in 3 months)."""
    moment = datetime.fromisoformat(iso).astimezone()
    return f"{when(moment)} ({relative(moment)})"


@click.group()
def auth() -> None:
    """Auth: status, token."""


@auth.command()
@click.pass_context
def status(ctx: click.Context) -> None:
    """The server, the account, the key's hint, scopes and expiry, and where the key is kept;
    a key the server refuses is shown with ✗ and why (exit code 1)."""
    credentials = ctx.obj["credentials"]
    key = config.effective_key(credentials)
    if not key:
        raise CliError(f"Not logged in to {ctx.obj['url']}. Run `gatehouse login`.")
    refused: CliError | None = None
    try:
        data = run_operation(ctx, whoami_spec(), {})
    except CliError as error:
        if error.reason == "unreachable":
            raise
        data, refused = {}, error
    from_environment = key != credentials.api_key or bool(os.environ.get("GATEHOUSE_API_KEY"))
    about: dict[str, Any] = {
        "status": f"✗ {refused.message}" if refused else "✓ Logged in",
        "server": ctx.obj["url"],
        "account": data.get("userEmail"),
        "workspace": data.get("workspaceName"),
        "key": f"{key[:4]}…{key[-4:]}",
        "scopes": data.get("scopes"),
        "expires": (
            local_time(credentials.key_expires_at)
            if credentials.key_expires_at and not from_environment
            else "not known here (the key came from GATEHOUSE_API_KEY)"
            if from_environment
            else "never"
        ),
        "keptIn": "GATEHOUSE_API_KEY (the environment)"
        if from_environment
        else credentials.kept_in or f"{config.credentials_path()} (mode 0600)",
    }
    if refused:
        about = {name: value for name, value in about.items() if value is not None}
        about["error"] = refused.reason
    output(ctx, about, record_text(about))
    if refused:
        ctx.exit(1)


@auth.command()
@click.pass_context
def token(ctx: click.Context) -> None:
    """Print the key this CLI uses, alone on stdout, for a script:
    `curl -H "Authorization: Bearer $(gatehouse auth token)" …`."""
    key = config.effective_key(ctx.obj["credentials"])
    if not key:
        raise CliError(f"Not logged in to {ctx.obj['url']}. Run `gatehouse login`.")
    click.echo(key)
