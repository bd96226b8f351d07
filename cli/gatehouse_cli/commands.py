"""The commands for API operations, made from the server's operation table (operations.json,
generated from its registry by `manage.py openapi --write`): nothing here names an operation,
a path or a field, so a new operation needs no change to the CLI."""

import json
import re
from importlib import resources
from typing import Any

import click

from . import config
from .api import Api, CliError, output
from .text import record_text, table

TABLE: dict[str, Any] = json.loads(
    resources.files(__package__).joinpath("operations.json").read_text(encoding="utf-8")
)


def dest(name: str) -> str:
    """The Python name click gives a parameter: `communityId` → `community_id`."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def api_for(ctx: click.Context) -> Api:
    return Api(ctx.obj["url"] + TABLE["apiBase"], config.effective_key(ctx.obj["credentials"]))


def run_operation(
    ctx: click.Context,
    spec: dict[str, Any],
    values: dict[str, Any],
    given: set[str] | None = None,
) -> Any:
    """Call the operation `spec` describes with the command line's `values` (by `dest`);
    `given`: the fields the command line set, sent even when their value is null (`none`)."""
    path = spec["path"]
    for argument in spec["arguments"]:
        path = path.replace("{" + argument["name"] + "}", str(values[dest(argument["name"])]))
    query = {option["name"]: values.get(dest(option["name"])) for option in spec["options"]}
    if not values.get("show_all"):
        # What the dashboard's list opens on, unless the command line names that option itself.
        for name, value in spec.get("defaults", {}).items():
            query[name] = value if query.get(name) is None else query[name]
    body = {
        field["name"]: values[dest(field["name"])]
        for field in spec["fields"]
        if values.get(dest(field["name"])) is not None or dest(field["name"]) in (given or ())
    }
    if spec["atLeastOneField"] and not body:
        flags = ", ".join(f"--{field['flag']}" for field in spec["fields"])
        raise CliError(f"Nothing to change: give at least one of {flags}.")
    sends_body = spec["method"] in ("POST", "PUT", "PATCH")
    return api_for(ctx).request(spec["method"], path, body if sends_body else None, **query)


def _json_value(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        raise click.BadParameter("must be JSON") from None


def _field_option(field: dict[str, Any]) -> click.Option:
    flag, name, help_text = field["flag"], dest(field["name"]), field["help"]
    if field["type"] == "boolean":
        return click.Option([f"--{flag}/--no-{flag}", name], default=None, help=help_text)
    kinds: dict[str, Any] = {
        "string": click.STRING,
        "integer": click.IntRange(min=field.get("min")),
        "json": click.STRING,
        "list": click.STRING,
        "quota": click.STRING,
    }
    return click.Option(
        [f"--{flag}", name],
        type=kinds[field["type"]],
        required=field["required"],
        default=field.get("default"),
        help=help_text,
    )


def _option_type(option: dict[str, Any]) -> Any:
    if option.get("type", "integer") == "integer":
        return click.IntRange(option["min"], option["max"])
    return click.Choice(option["choices"]) if "choices" in option else click.STRING


def _field_value(field: dict[str, Any], value: Any) -> Any:
    """A JSON field's text decoded; a list field's comma-separated items."""
    if field["type"] == "json":
        return _json_value(value)
    if field["type"] == "list":
        return [item.strip() for item in value.split(",") if item.strip()]
    if field["type"] == "quota":
        return _quota_value(value)
    return value


def _quota_value(text: str) -> dict[str, Any] | None:
    """A quota as people write it: 10000/month, 10,000/day, 500/never; none for none."""
    if text.strip().lower() == "none":
        return None
    match = re.fullmatch(r"\s*([\d,_]+)\s*/\s*(day|week|month|never)\s*", text.lower())
    if match is None:
        raise click.BadParameter(
            "give requests/period, e.g. 10000/month (period: day, week, month or never)"
        )
    return {"requests": int(re.sub(r"[,_]", "", match.group(1))), "period": match.group(2)}


def _show(ctx: click.Context, spec: dict[str, Any], values: dict[str, Any], data: Any) -> None:
    if data is None:  # 204: nothing to show but that it is done
        arguments = {a["name"]: values[dest(a["name"])] for a in spec["arguments"]}
        click.echo((spec.get("done") or "Done.").format(**arguments))
    elif spec["columns"] is not None:
        if values.get("wide"):
            output(ctx, data, table(data["data"], spec["wideColumns"], width=None))
        else:
            output(ctx, data, table(data["data"], spec["columns"]))
        if data.get("next") and not ctx.obj["json"]:
            more = f"gatehouse {spec['group']} {spec['verb']} --cursor {data['next']}"
            click.echo(f"More: {more}", err=True)
    else:
        output(ctx, data, record_text(data))
        if isinstance(data, dict) and "secret" in data:
            # On stderr, so that stdout holds only what a script would keep.
            click.echo("Store the secret now: it is shown only this once.", err=True)


def _params(spec: dict[str, Any]) -> list[click.Parameter]:
    params: list[click.Parameter] = [
        click.Argument(
            [dest(argument["name"])],
            type=click.IntRange(argument["min"], argument["max"]),
            metavar=argument["metavar"],
        )
        for argument in spec["arguments"]
    ]
    params += [
        click.Option(
            [f"--{option['flag']}", dest(option["name"])],
            type=_option_type(option),
            help=option["help"],
        )
        for option in spec["options"]
    ]
    params += [_field_option(field) for field in spec["fields"]]
    if spec.get("defaults"):
        flags = {option["name"]: option["flag"] for option in spec["options"]}
        opens_on = ", ".join(f"--{flags[name]} {v}" for name, v in spec["defaults"].items())
        params.append(
            click.Option(
                ["--all", "show_all"],
                is_flag=True,
                help=f"Every one; without it, as the dashboard's list opens: {opens_on}.",
            )
        )
    if spec.get("wideColumns"):
        params.append(
            click.Option(["--wide", "wide"], is_flag=True, help="Every column, times in full.")
        )
    return params


def _variant_flag(spec: dict[str, Any], base: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The one path argument `spec` has beyond `base`'s, and the option it becomes."""
    [extra] = [a for a in spec["arguments"] if a not in base["arguments"]]
    return re.sub(r"-id$", "", dest(extra["name"]).replace("_", "-")), extra


def command_for(spec: dict[str, Any], variant: dict[str, Any] | None = None) -> click.Command:
    """The command of `spec`; with `variant` (the same operation for one more path argument, as
    a service account's key is a key), that argument is an option choosing the variant."""
    params = _params(spec)
    help_text = spec["help"]
    if variant is not None:
        flag, extra = _variant_flag(variant, spec)
        params.append(
            click.Option(
                [f"--{flag}", dest(extra["name"])],
                type=click.IntRange(extra["min"], extra["max"]),
                help=variant["help"],
            )
        )
        help_text += f" With --{flag} ID: {variant['help']}"

    def callback(**values: Any) -> None:
        ctx = click.get_current_context()
        chosen = spec
        if variant is not None and values.get(dest(_variant_flag(variant, spec)[1]["name"])):
            chosen = variant
        given = set()
        for field in chosen["fields"]:
            if values.get(dest(field["name"])) is not None:
                given.add(dest(field["name"]))
                values[dest(field["name"])] = _field_value(field, values[dest(field["name"])])
        _show(ctx, chosen, values, run_operation(ctx, chosen, values, given))

    return click.Command(
        spec["verb"],
        callback=callback,
        params=params,
        help=help_text,
        short_help=spec["help"].split(". ")[0].rstrip(".") + ".",
    )


def add_operation_commands(cli: click.Group) -> None:
    """One group per noun (`products`), one command per operation (`products list`); two
    operations with one spelling are one command, the one with more path arguments chosen by
    an option (`keys create --service-account ID`)."""
    groups: dict[str, click.Group] = {}
    spelled: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for spec in TABLE["commands"]:
        spelled.setdefault((spec["group"], spec["verb"]), []).append(spec)
    for (name, _), specs in spelled.items():
        group = groups.get(name)
        if group is None:
            group = groups[name] = click.Group(name)
            cli.add_command(group)
        base, *variants = sorted(specs, key=lambda s: len(s["arguments"]))
        group.add_command(command_for(base, variants[0] if variants else None))
    for name, group in groups.items():
        verbs = ", ".join(sorted(group.commands))
        group.help = f"{name.capitalize()}: {verbs}."
