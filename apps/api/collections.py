"""A collection the API lists and adds to, declared the same way for every resource."""

from collections.abc import Callable
from typing import Any

from .operations import LIMIT, Call, JsonSchema, Needs, Operation, Param, list_schema

Run = Callable[[Call, dict[str, Any], Any], dict[str, Any]]


def collection_operations(
    *,
    path: str,
    group: str,
    item: str,
    plural: str,
    record_name: str,
    record: JsonSchema,
    body: JsonSchema,
    list_run: Run,
    create_run: Run,
    list_summary: str,
    create_summary: str,
    list_title: str | None = None,
    create_title: str | None = None,
    params: tuple[Param, ...] = (),
    members: bool = False,
    limited_create: bool = True,
) -> tuple[Operation, Operation]:
    """`list_<plural>` (GET `path`, newest first, `limit`) and `create_<item>` (POST `path`,
    201) of one collection of the `group` scopes, declared the same way for every resource.
    With `limited_create`, a key limited to selected objects of `group` may not create one."""
    nested = any(param.location == "path" for param in params)
    return (
        Operation(
            name=f"list_{plural}",
            method="GET",
            path=path,
            needs=Needs(scope=f"{group}:read", members=members),
            title=list_title or f"List {plural}",
            summary=list_summary,
            output_name=f"{record_name}List",
            output=list_schema(record),
            params=(*params, LIMIT),
            can_be_not_found=nested,
            run=list_run,
        ),
        Operation(
            name=f"create_{item}",
            method="POST",
            path=path,
            needs=Needs(
                scope=f"{group}:write", members=members, creates=group if limited_create else None
            ),
            title=create_title or f"Create a {item}",
            summary=create_summary,
            output_name=record_name,
            output=record,
            body_name=f"{record_name}Create",
            body=body,
            params=params,
            status=201,
            can_be_not_found=nested,
            run=create_run,
        ),
    )
