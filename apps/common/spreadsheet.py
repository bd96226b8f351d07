"""CSV exports that are safe to open in a spreadsheet."""

import csv
from collections.abc import Iterable, Iterator


def safe_cell(value: object) -> str:
    """A CSV cell that a spreadsheet will not run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class _Echo:
    def write(self, value: str) -> str:
        return value


def csv_lines(rows: Iterable[Iterable[object]]) -> Iterator[str]:
    """Each row as one CSV line, every cell made safe; for a StreamingHttpResponse."""
    writer = csv.writer(_Echo())
    for row in rows:
        yield writer.writerow([safe_cell(cell) for cell in row])
