"""The tools' schemas as strict MCP clients read them: a nullable field is `anyOf` with
`{"type": "null"}`, never a list of types (the Inspector's --strict warns on those)."""

from config.mcp import TOOLS


def list_types(value, path=""):
    if isinstance(value, dict):
        found = [path] if isinstance(value.get("type"), list) else []
        return found + [p for k, v in value.items() for p in list_types(v, f"{path}/{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in list_types(v, f"{path}[{i}]")]
    return []


def test_no_tool_schema_has_a_list_of_types_and_nullable_fields_are_any_of():
    schemas = {
        name: {"input": tool.input_schema, "output": tool.output_schema}
        for name, tool in TOOLS.items()
    }
    assert [p for name, s in schemas.items() for p in list_types(s, name)] == []
    nullable = [p for name, s in schemas.items() for p in _any_of_null(s, name)]
    assert nullable, "some field is nullable (an expiry, a last use)"


def _any_of_null(value, path):
    if isinstance(value, dict):
        here = [path] if {"type": "null"} in value.get("anyOf", []) else []
        return here + [p for k, v in value.items() for p in _any_of_null(v, f"{path}/{k}")]
    if isinstance(value, list):
        return [p for v in value for p in _any_of_null(v, path)]
    return []
