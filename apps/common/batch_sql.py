"""Literal rows as a derived table, for statements that write many rows at once (the usage
flush): `UPDATE t SET ... FROM <rows> WHERE ...`. PostgreSQL takes typed VALUES; SQLite (3.33
or newer) a UNION ALL of SELECTs, which names its columns without a type."""

from collections.abc import Iterator, Sequence
from typing import Any

from django.db import connection

# Parameters a statement may carry: SQLite builds before 3.32 allow 999.
PARAMETERS_PER_STATEMENT = 999


def batches(rows: Sequence[Any], columns: int) -> Iterator[Sequence[Any]]:
    """`rows` in slices small enough for one statement of `columns` parameters a row."""
    size = max(1, PARAMETERS_PER_STATEMENT // columns)
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def rows_table(rows: Sequence[Sequence[Any]], columns: Sequence[tuple[str, str]]) -> str:
    """The SQL of a derived table `v` holding `rows` (their values passed as parameters, in
    order), its columns named and, on PostgreSQL, typed by `columns`: (name, PostgreSQL type)."""
    if connection.vendor == "postgresql":
        row = "(" + ", ".join(f"%s::{kind}" for _, kind in columns) + ")"
        names = ", ".join(name for name, _ in columns)
        return f"(VALUES {', '.join([row] * len(rows))}) AS v ({names})"
    row = "SELECT " + ", ".join(f"%s AS {name}" for name, _ in columns)
    return f"({' UNION ALL '.join([row] * len(rows))}) AS v"
