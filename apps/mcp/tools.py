"""Each operation as an MCP tool: its arguments (the API's parameters and body fields as one
object, compacted for an assistant's context), its output shape and its annotations."""

from typing import Any

import mcp_types as types

from apps.api.operations import Operation


def tool_input_schema(op: Operation) -> dict[str, Any]:
    """The tool's arguments: its parameters and the API body's fields, as one object.

    The body's own JSON Schema (the one the OpenAPI document shows) gives the fields; path and
    query parameters sit beside them under the same names the API uses.
    """
    properties: dict[str, Any] = {param.name: param.schema for param in op.params}
    required = [param.name for param in op.params if param.required]
    schema: dict[str, Any] = {"type": "object"}
    if op.body is not None:
        properties.update(op.body["properties"])
        required += op.body.get("required", [])
        for keyword in ("minProperties",):  # the tool's description says the rest
            if keyword in op.body:
                schema[keyword] = op.body[keyword]
    schema.update(properties=properties, additionalProperties=False)
    if required:
        schema["required"] = required
    return schema


# An enum longer than this (the ~600 time zones) is described in words instead: an assistant
# pays for every byte of tools/list in its context, and the service names close matches.
LONG_ENUM = 30


def compact_schema(schema: Any) -> Any:
    """The schema as a tool shows it: no regex patterns (the API's validators still apply
    them and name the field in plain words) and no long enumerations."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    compact = {
        key: compact_schema(value)
        for key, value in schema.items()
        if key not in ("pattern", "additionalProperties")  # unknown arguments are refused anyway
        and not (key == "enum" and len(value) > LONG_ENUM)
        and not (key == "maximum" and value > 2**31)  # an id's database limit says nothing
    }
    if "enum" in schema and "enum" not in compact and "description" not in compact:
        compact["description"] = f"One of {len(schema['enum'])} names, e.g. {schema['enum'][0]}."
    return nullable_as_any_of(compact)


# What stays on the outer schema when a nullable type becomes `anyOf`.
_OUTER = ("description", "title", "default")


def nullable_as_any_of(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"type": ["integer", "null"], ...}` as `{"anyOf": [{"type": "integer", ...},
    {"type": "null"}]}`: MCP clients' validators (the Inspector's --strict) warn on a list of
    types; the OpenAPI document keeps JSON Schema's short form."""
    kinds = schema.get("type")
    if not (isinstance(kinds, list) and "null" in kinds and len(kinds) == 2):
        return schema
    [kind] = [k for k in kinds if k != "null"]
    inner = {k: v for k, v in schema.items() if k not in _OUTER and k != "type"}
    outer = {k: v for k, v in schema.items() if k in _OUTER}
    return {"anyOf": [{"type": kind, **inner}, {"type": "null"}], **outer}


def output_shape(schema: Any) -> Any:
    """A record's shape for a tool's outputSchema: types, properties and items only. Clients
    check structured results against it; the API's full schema is in its OpenAPI document."""
    if not isinstance(schema, dict):
        return schema
    shape = {key: schema[key] for key in ("type",) if key in schema}
    if "properties" in schema:
        shape["properties"] = {
            name: output_shape(value) for name, value in schema["properties"].items()
        }
    if "items" in schema:
        shape["items"] = output_shape(schema["items"])
    kinds = shape.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        # A nullable value's shape, an object's properties too, is `{}`: it takes either, in
        # the fewest bytes of tools/list (held under 8 KB), with no list of types; the whole
        # shape is in the OpenAPI document.
        return {}
    return shape


def tool_for(op: Operation) -> types.Tool:
    read_only = op.method == "GET"
    return types.Tool(
        name=op.name,
        title=op.title,
        description=op.summary,
        input_schema=compact_schema(tool_input_schema(op)),
        output_schema=output_shape(op.output),
        # The destructive and idempotent hints mean something only for tools that write.
        annotations=types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=None if read_only else op.method == "DELETE",
            idempotent_hint=None if read_only else op.method in ("PUT", "PATCH", "DELETE"),
            open_world_hint=False,
        ),
    )
