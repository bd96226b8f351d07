"""Talking to a Gatehouse server: HTTP calls, their errors as one clear line, and output
(records and tables as people read them: text.py)."""

import json
import re
from typing import Any

import click
import httpx

LOGIN_AGAIN = {"expired-key", "revoked-key", "invalid-key", "missing-key"}


# Set by main() when --json was given anywhere: errors are then JSON too.
JSON_ERRORS = False


class CliError(click.ClickException):
    """One clear line on stderr and exit code 1; with --json, `{"error", "message"}` there."""

    def __init__(self, message: str, reason: str = "cli-error") -> None:
        super().__init__(message)
        self.reason = reason

    def show(self, file: Any = None) -> None:
        if JSON_ERRORS:
            click.echo(json.dumps({"error": self.reason, "message": self.message}), err=True)
        else:
            click.echo(f"error: {self.message}", err=True)


def send(method: str, url: str, **kwargs: Any) -> httpx.Response:
    try:
        return httpx.request(method, url, timeout=30, **kwargs)
    except httpx.HTTPError as error:
        raise CliError(
            f"Cannot reach {url} ({error or type(error).__name__}).", "unreachable"
        ) from None


def _json_of(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise CliError(
            f"The server answered {response.status_code} without JSON; is "
            f"{response.url.copy_with(path='/')} a Gatehouse server?"
        ) from None


class Api:
    """The workspace API at `base` (the server's address and the API's path), with the key
    from the environment or the credentials file."""

    def __init__(self, base: str, key: str | None) -> None:
        self.base = base
        self.key = key

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, **params: Any
    ) -> Any:
        if not self.key:
            raise CliError("Not logged in. Run `gatehouse login` (or set GATEHOUSE_API_KEY).")
        response = send(
            method,
            f"{self.base}{path}",
            headers={"Authorization": f"Bearer {self.key}"},
            json=body,
            params={k: v for k, v in params.items() if v is not None},
        )
        if response.status_code == 204:
            return None
        data = _json_of(response)
        if response.is_success:
            return data
        reason = data.get("error", "error") if isinstance(data, dict) else "error"
        message = data.get("message", "") if isinstance(data, dict) else ""
        if reason in LOGIN_AGAIN:
            raise CliError(f"{message} Run `gatehouse login` to log in again. ({reason})", reason)
        if reason == "insufficient-scope" and (needed := _challenged_scope(response)):
            message += (
                " A login key holds what was approved at login: run `gatehouse login` and "
                f"approve {needed.replace(',', ' or ')} this time."
            )
        raise CliError(f"{message} ({reason})", reason)


def _challenged_scope(response: httpx.Response) -> str:
    """The scopes a 403 names in its challenge (RFC 6750 §3), comma-separated as typed."""
    found = re.search(r'scope="([^"]*)"', response.headers.get("WWW-Authenticate", ""))
    return ",".join(found.group(1).split()) if found else ""


def oauth_result(response: httpx.Response) -> dict[str, Any]:
    data = _json_of(response)
    if response.is_success:
        return dict(data)
    raise CliError(f"Login refused: {data.get('error_description') or data.get('error')}.")


def output(ctx: click.Context, data: Any, human: str) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False) if ctx.obj["json"] else human)
