"""Small validators shared by API bodies, dashboard forms and management commands."""

import re
import unicodedata
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.utils.dateparse import parse_datetime


class InvalidInput(Exception):
    """A value a client sent is not acceptable; `message` is one sentence naming the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


# What no name may hold once trimmed (docs/product.md §3.3): controls (Cc), format characters (Cf:
# bidi overrides, zero-width spaces and joiners), line and paragraph separators (Zl, Zp),
# surrogates and private-use characters. They hide or reorder what a reader sees.
NAME_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co"})


def clean_text(value: Any, field: str, *, max_length: int) -> str:
    """A name, by the one rule for every name (docs/product.md §3.3).

    Surrounding whitespace (tabs and newlines included) is trimmed; what remains is 1 to
    `max_length` code points with no character of NAME_FORBIDDEN_CATEGORIES, so it starts and
    ends with a visible character.
    """
    if not isinstance(value, str):
        raise InvalidInput(field, f"{field} must be a string.")
    text = value.strip()
    if not text:
        raise InvalidInput(field, f"{field} must not be empty.")
    for ch in text:
        if unicodedata.category(ch) in NAME_FORBIDDEN_CATEGORIES:
            raise InvalidInput(
                field,
                f"{field} must not contain control or invisible formatting characters "
                f"(U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}).",
            )
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


# The largest id a database row can have (a signed 64-bit integer, Django's BigAutoField).
MAX_ID = 2**63 - 1


def parse_id(value: str) -> int | None:
    """A row id from a URL or query string, or None when it cannot be one.

    Only ASCII digits count (str.isdigit() also takes "²" and "٣"), and the value must fit the
    database's integer, so a bad id is an empty result and never a 500.
    """
    if not (value.isascii() and value.isdigit()) or len(value) > 19:
        return None
    number = int(value)
    return number if 0 < number <= MAX_ID else None


# Dates people and programs may send: years 2000 to 9998, so that a day added or a zone
# applied never leaves what Python and PostgreSQL can hold (a year past 9999 or before 1).
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, tzinfo=UTC)


# RFC 3339 §5.6 exactly, end to end: nothing before or after it (a `$` in a pattern would let a
# trailing newline through), no other character inside, an offset of hours and minutes.
RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})", re.ASCII
)
# The offsets places use: from -12:00 (Baker Island) to +14:00 (Kiribati's Line Islands).
LOWEST_OFFSET, HIGHEST_OFFSET = timedelta(hours=-12), timedelta(hours=14)


def parse_moment(value: Any, field: str) -> datetime:
    """An RFC 3339 date-time with its offset, as an aware UTC datetime. InvalidInput names the
    field for anything else: no offset, an hour 25, a character before, inside or after it, an
    offset no place uses (beyond -12:00 to +14:00), a year out of range."""
    problem = f"{field} must be a date-time with a time zone, such as 2027-03-31T12:00:00Z."
    if not isinstance(value, str) or not RFC3339.fullmatch(value):
        raise InvalidInput(field, problem)
    try:
        moment = parse_datetime(value)
    except ValueError:  # well-formed but impossible: hour 25, +99:00
        moment = None
    if moment is None or moment.utcoffset() is None:
        raise InvalidInput(field, problem)
    offset = moment.utcoffset()
    assert offset is not None
    if not LOWEST_OFFSET <= offset <= HIGHEST_OFFSET:
        raise InvalidInput(
            field, f"{field} has an offset no place uses: offsets run from -12:00 to +14:00."
        )
    try:
        moment = moment.astimezone(UTC)
    except OverflowError:
        moment = None
    if moment is None or not EARLIEST <= moment <= LATEST:
        raise InvalidInput(field, f"{field} must fall between the years 2000 and 9998.")
    return moment


def parse_day(value: Any) -> date | None:
    """A calendar day YYYY-MM-DD from a form or a query (years 2000 to 9998), or None."""
    if not isinstance(value, str) or len(value) != 10 or not value.isascii():
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return None
    return day if EARLIEST.date() <= day <= LATEST.date() else None
