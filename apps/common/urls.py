"""URL converters shared by every app."""

from django.urls import register_converter

from .validation import MAX_ID


class IdConverter:
    """`<id:name>`: a row id, 1 to the database's largest integer; anything else is a 404.

    Django's `int` converter takes any length of digits, and a number past the database's
    integer turns a lookup into a 500 (SQLite raises OverflowError).
    """

    regex = "[1-9][0-9]{0,18}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValueError("too large for an id")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
