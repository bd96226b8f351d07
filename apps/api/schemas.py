"""JSON Schema for the texts the validators of `apps.common.validation` accept.

The same schemas describe the API's bodies in the OpenAPI document and the MCP tools' inputs.
"""

from typing import Any

# Characters the API refuses in names: controls (lone surrogates too, which JSON Schema regexes
# cannot express and which no client sends by accident).
_BAD = r"\u0000-\u001f\u007f-\u009f"


def single_line_text(max_length: int) -> dict[str, Any]:
    """A name as clean_text() accepts it: 1..max_length characters once trimmed."""
    return {
        "type": "string",
        "pattern": (
            rf"^[^\S{_BAD}]*[^\s{_BAD}](?:[^{_BAD}]{{0,{max_length - 2}}}[^\s{_BAD}])?[^\S{_BAD}]*$"
        ),
        "description": f"1 to {max_length} characters after trimming; no control characters.",
    }


def long_text(max_length: int, *, required: bool = True) -> dict[str, Any]:
    """A body text as clean_long_text() accepts it: at most max_length characters, newlines and
    tabs allowed, other control characters not; when required, not blank."""
    allowed = r"[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]"
    visible = r"[^\s\u0000-\u001f\u007f-\u009f]"
    pattern = rf"^{allowed}*{visible}{allowed}*$" if required else rf"^{allowed}*$"
    return {
        "type": "string",
        "maxLength": max_length,
        "pattern": pattern,
        "description": f"Up to {max_length} characters; newlines allowed"
        + ("." if not required else "; not blank."),
    }


def date_time() -> dict[str, Any]:
    return {"type": "string", "format": "date-time"}
