"""JSON Schema for the texts the validators of `apps.common.validation` accept.

The same schemas describe the API's bodies in the OpenAPI document and the MCP tools' inputs.
"""

from typing import Any

# The code points of NAME_FORBIDDEN_CATEGORIES (apps.common.validation) for Python 3.11's
# Unicode 14, as ranges; a test recomputes them from unicodedata.
NAME_FORBIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C),
    (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xF8FF),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
)  # fmt: skip


def _class_char(code_point: int) -> str:
    # BMP characters as \uXXXX escapes (readable in the document); others as themselves, since
    # JSON Schema regexes have no escape for them that every dialect reads.
    return f"\\u{code_point:04x}" if code_point <= 0xFFFF else chr(code_point)


def _without_surrogates(low: int, high: int) -> tuple[int, int] | None:
    # Lone surrogates (U+D800-DFFF) are refused by the code but cannot be written in a pattern
    # that every regex engine accepts (Rust's, which the fuzzer validates with, has no such
    # characters), so the document leaves them out of the class.
    if low >= 0xD800 and high <= 0xDFFF:
        return None
    if low <= 0xDFFF and high >= 0xD800:
        low = max(low, 0xE000)
    return low, high


_FORBIDDEN = "".join(
    _class_char(low) if low == high else f"{_class_char(low)}-{_class_char(high)}"
    for low, high in filter(None, (_without_surrogates(*r) for r in NAME_FORBIDDEN_RANGES))
)


def single_line_text(max_length: int) -> dict[str, Any]:
    """A name as clean_text() accepts it: 1..max_length characters once trimmed, none of them
    a control, format or separator character."""
    visible = rf"[^\s{_FORBIDDEN}]"
    return {
        "type": "string",
        "pattern": rf"^\s*{visible}(?:[^{_FORBIDDEN}]{{0,{max_length - 2}}}{visible})?\s*$",
        "description": f"1 to {max_length} characters, trimmed; no control or invisible "
        "characters (Unicode Cc, Cf, Zl, Zp).",
    }


def long_text(max_length: int, *, required: bool = True) -> dict[str, Any]:
    """A body text as clean_long_text() accepts it: at most max_length characters, newlines and
    tabs allowed, other control characters not; when required, not blank."""
    allowed = r"[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]"
    visible = r"[^\s\u0000-\u001f\u007f-\u009f]"
    pattern = rf"^{allowed}*{visible}{allowed}*$" if required else rf"^{allowed}*$"
    schema: dict[str, Any] = {
        "type": "string",
        "maxLength": max_length,
        "pattern": pattern,
        "description": f"Up to {max_length} characters; newlines allowed"
        + ("." if not required else "; not blank."),
    }
    if not required:
        schema["default"] = ""  # may be left empty (the CLI sends it when not given)
    return schema


def date_time() -> dict[str, Any]:
    return {"type": "string", "format": "date-time"}
