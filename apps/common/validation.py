"""Small validators shared by API bodies, dashboard forms and management commands."""

import unicodedata
from typing import Any


class InvalidInput(Exception):
    """A value a client sent is not acceptable; `message` is one sentence naming the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def clean_text(value: Any, field: str, *, max_length: int) -> str:
    """A required single-line text: trimmed, 1..max_length code points, no control characters."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"{field} must be a string.")
    # Control characters (NUL, tabs and newlines among them) and lone surrogates cannot be
    # stored or shown safely; they are refused wherever they are, even where trimming would go.
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):
        raise InvalidInput(field, f"{field} must not contain control characters.")
    text = value.strip()
    if not text:
        raise InvalidInput(field, f"{field} must not be empty.")
    if len(text) > max_length:
        raise InvalidInput(field, f"{field} must be at most {max_length} characters long.")
    return text


def clean_bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(field, f"{field} must be true or false.")
    return value


def clean_long_text(value: Any, field: str, *, max_length: int, required: bool = True) -> str:
    """A multi-line text (a post or page body), trimmed: newlines and tabs allowed, other
    controls not. The length limit counts what was sent, before trimming."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"{field} must be a string.")
    if len(value) > max_length:
        raise InvalidInput(field, f"{field} must be at most {max_length} characters long.")
    if any(unicodedata.category(ch) in ("Cc", "Cs") and ch not in "\n\t\r" for ch in value):
        raise InvalidInput(field, f"{field} must not contain control characters.")
    text = value.strip()
    if required and not text:
        raise InvalidInput(field, f"{field} must not be empty.")
    return text
