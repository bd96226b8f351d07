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
    text = value.strip()
    if not text:
        raise InvalidInput(field, f"{field} must not be empty.")
    if len(text) > max_length:
        raise InvalidInput(field, f"{field} must be at most {max_length} characters long.")
    # Control characters (NUL among them) and lone surrogates cannot be stored or shown safely.
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        raise InvalidInput(field, f"{field} must not contain control characters.")
    return text


def clean_bool(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(field, f"{field} must be true or false.")
    return value
