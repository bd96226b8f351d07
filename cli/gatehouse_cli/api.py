"""Talking to a Gatehouse server: HTTP calls, their errors as one clear line, and output."""

import json
import re
from collections.abc import Iterable
from datetime import datetime
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


def label(name: str) -> str:
    """A record's field name as people read it: `workspaceName` → `Workspace name`."""
    words = re.sub(r"(?<!^)([A-Z])", r" \1", name).lower()
    return words[:1].upper() + words[1:]


_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)")


def _text(value: Any) -> str:
    """A value as people read it; a time as `keys list` writes it (Nov 27, 2026 06:46 UTC),
    in the terminal's zone."""
    if isinstance(value, str) and _ISO_TIME.fullmatch(value):
        return when(datetime.fromisoformat(value).astimezone())
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    if isinstance(value, dict) and {"used", "left", "requests", "period"} <= value.keys():
        return _quota_text(value)
    if isinstance(value, dict):
        return "; ".join(f"{label(k).lower()}: {_text(v) or '-'}" for k, v in value.items())
    return "" if value is None else str(value)


_THIS_PERIOD = {"day": "today", "week": "this week", "month": "this month", "never": "in all"}


def _quota_text(use: dict[str, Any]) -> str:
    """A quota's period as the key's page says it: 7,412 of 10,000 used this month, 2,588
    left; refills Dec 28, 2026 14:00 UTC."""
    used = f"{use['used']:,} of {use['requests']:,} used {_THIS_PERIOD.get(use['period'], '')}"
    refill = f"refills {_text(use['refillsAt'])}" if use.get("refillsAt") else "does not refill"
    return f"{used}, {use['left']:,} left; {refill}"


def record_text(record: dict[str, Any]) -> str:
    """A record as aligned "Label  value" lines; a key's holder as people read it."""
    labels = {name: label(name) for name in record}
    values = dict(record)
    if "holderEmail" in values and _service_account_name(record):
        # A service account's address ends in .invalid and says nothing: its name instead.
        labels["holderEmail"] = "Holder"
        values["holderEmail"] = f"{_service_account_name(record)} (service account)"
    width = max((len(text) for text in labels.values()), default=0)
    return "\n".join(
        f"{labels[name].ljust(width)}  {_text(value)}" for name, value in values.items()
    )


def _service_account_name(row: dict[str, Any]) -> str:
    account = row.get("serviceAccount")
    return str(account.get("name") or "") if isinstance(account, dict) else ""


def when(moment: datetime) -> str:
    """A moment as the dashboard and the e-mails write it, with its zone: Nov 25, 2027 14:02
    CET (here in the terminal's zone)."""
    return f"{moment:%b} {moment.day}, {moment:%Y %H:%M %Z}".rstrip()


def _cell(value: Any, form: str | None, row: dict[str, Any]) -> str:
    """A table cell as people read it: times to the minute in the terminal's zone, cents as
    money, a key's holder by its service account's name when it has one; anything unexpected
    as it came."""
    if form == "holder":
        return _service_account_name(row) or _text(value)
    if form == "date-time" and isinstance(value, str):
        try:
            return when(datetime.fromisoformat(value).astimezone())
        except ValueError:
            return value
    if form == "cents" and isinstance(value, int):
        return f"{value / 100:.2f}"
    return _text(value)


def _title(column: dict[str, Any]) -> str:
    name = column["name"]
    if column.get("format") == "cents":
        name = name.removesuffix("Cents")
    if column.get("format") == "holder":
        name = "holder"
    return label(name).upper()


def table(rows: Iterable[dict[str, Any]], columns: list[dict[str, Any]]) -> str:
    """Rows as a plain table with upper-case headers; "(none)" when there are none."""
    rows = list(rows)
    if not rows:
        return "(none)"
    titles = [_title(column) for column in columns]
    cells = [[_cell(row.get(c["name"]), c.get("format"), row) for c in columns] for row in rows]
    widths = [max(len(title), *(len(c[i]) for c in cells)) for i, title in enumerate(titles)]
    lines = ["  ".join(t.ljust(w) for t, w in zip(titles, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    return "\n".join(line.rstrip() for line in lines)


def output(ctx: click.Context, data: Any, human: str) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False) if ctx.obj["json"] else human)
