"""The command table of the `gatehouse` CLI, built from the operations list.

The CLI (cli/, no Django) reads `cli/gatehouse_cli/operations.json` and makes one command per
operation from it: arguments for path parameters, options for query parameters and body
fields, a table for lists. `manage.py openapi --write` writes it beside `openapi.json`, and a
test fails when either drifts from the code, so a new operation reaches the terminal with no
change to any CLI file.
"""

import json
import re
from pathlib import Path
from typing import Any

from django.urls import reverse

from apps.api.operations import Operation, Param
from apps.api.scopes import EVERY_SCOPE
from apps.oauth.clients import CLI_CLIENT_ID as CLIENT_ID

from .operations import OPERATIONS

CLI_TABLE_FILE = Path(__file__).resolve().parent.parent / "cli/gatehouse_cli/operations.json"
JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "boolean": "boolean",
    "list": "list",
    "quota": "quota",
}


def kebab(name: str) -> str:
    """`priceCents` → `price-cents`."""
    return re.sub(r"(?<!^)([A-Z])", r"-\1", name).lower()


def _plural(noun: str) -> str:
    return noun if noun.endswith("s") else noun + "s"


def command_words(op: Operation) -> tuple[str, str]:
    """(group, verb): `list_products` is `products list`, `create_post` is `posts create`."""
    if op.cli:
        group, verb = op.cli.split()
        return group, verb
    verb, _, noun = op.name.partition("_")
    return _plural(noun.replace("_", "-")), verb


def _param(param: Param) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": param.name,
        "metavar": kebab(param.name).upper().replace("-", "_"),
        "flag": kebab(param.name),
        "in": param.location,
        "type": param.type,
        "help": param.description,
    }
    if param.type == "integer":
        entry.update(min=param.minimum, max=param.maximum)
    elif param.enum:
        entry["choices"] = list(param.enum)
    return entry


def _field(name: str, schema: dict[str, Any], required: bool, flag: str) -> dict[str, Any]:
    """A body field as an option; one with a default is never required on the command line."""
    kind = schema.get("type")
    if kind == "array" and schema.get("items", {}).get("type") == "string":
        kind = "list"  # comma-separated on the command line: --scopes pages:read,pages:write
    if set(schema.get("properties", {})) == {"requests", "period"}:
        kind = "quota"  # as people write it: --quota 10000/month
    return {
        "name": name,
        "flag": flag,
        "type": JSON_TYPES.get(kind, "json") if isinstance(kind, str) else "json",
        "required": required and "default" not in schema,
        "help": schema.get("description", ""),
        **({"default": schema["default"]} if "default" in schema else {}),
        **({"min": schema["minimum"]} if "minimum" in schema else {}),
    }


def _column_format(name: str, schema: dict[str, Any]) -> str | None:
    if schema.get("format") == "date-time":
        return "date-time"  # shown in the terminal's time zone, to the minute
    if name.endswith("Cents"):
        return "cents"  # shown as 19.99
    if name == "holderEmail":
        return "holder"  # a service account's name, never its .invalid address (§12)
    return None


def _columns(op: Operation, *, wide: bool = False) -> list[dict[str, Any]] | None:
    """The record fields a list shows as table columns: the operation's choice, each in the form
    it names; `wide`, every field but long texts, times in full."""
    data = op.output.get("properties", {}).get("data")
    if not data:
        return None
    properties = data["items"]["properties"]
    if op.cli_columns and not wide:
        chosen = dict(column.partition(":")[::2] for column in op.cli_columns)
        return [
            {"name": name, "format": chosen[name] or _column_format(name, properties[name])}
            for name in chosen
        ]
    return [
        {"name": name, "format": _column_format(name, schema)}
        for name, schema in properties.items()
        if schema.get("maxLength", 0) < 1000
    ]


def command_for(op: Operation) -> dict[str, Any]:
    group, verb = command_words(op)
    body = op.body or {"properties": {}}
    required = set(body.get("required", []))
    return {
        "group": group,
        "verb": verb,
        "operation": op.name,
        "method": op.method,
        "path": op.path,
        "help": op.summary,
        "arguments": [_param(p) for p in op.params if p.location == "path"],
        "options": [_param(p) for p in op.params if p.location == "query"],
        "fields": [
            _field(name, schema, name in required, op.cli_flags.get(name, kebab(name)))
            for name, schema in body["properties"].items()
        ],
        "atLeastOneField": body.get("minProperties", 0) >= 1,
        "columns": _columns(op),
        "wideColumns": _columns(op, wide=True) if op.cli_columns else None,
        "defaults": op.cli_defaults,
        "done": op.cli_done,
    }


def build_cli_table() -> dict[str, Any]:
    return {
        "apiBase": reverse("api:openapi").rsplit("/", 1)[0],  # /api/v1
        "scopes": list(EVERY_SCOPE),  # what `gatehouse login --scopes` may ask for
        # What it asks for unless told: everything, the keys scopes included, so that the keys
        # commands work after a plain `gatehouse login` (only owners and admins log the CLI in,
        # and they narrow on the approval page).
        "defaultScopes": list(EVERY_SCOPE),
        "login": {
            "clientId": CLIENT_ID,
            "deviceCode": "/oauth/device/code",
            "token": "/oauth/token",
            "revoke": "/oauth/revoke",
            "grantType": "urn:ietf:params:oauth:grant-type:device_code",
            "whoami": "get_workspace",
        },
        "commands": [command_for(op) for op in OPERATIONS],
    }


def render_cli_table() -> str:
    return json.dumps(build_cli_table(), indent=2, ensure_ascii=False) + "\n"
