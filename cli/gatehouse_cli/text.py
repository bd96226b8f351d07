"""What the terminal shows: a record as aligned "Label  value" lines, a list as a table that fits
100 columns, times as the dashboard writes them (a moment with its zone, or how long ago)."""

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any


def label(name: str) -> str:
    """A record's field name as people read it: `workspaceName` → `Workspace name`."""
    words = re.sub(r"(?<!^)([A-Z])", r" \1", name).lower()
    return words[:1].upper() + words[1:]


_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)")


def _text(value: Any) -> str:
    """A value as people read it; a time as `keys list` writes it (Nov 27, 2026 06:46 UTC),
    in the terminal's zone."""
    if isinstance(value, str) and _ISO_TIME.fullmatch(value):
        return when(datetime.fromisoformat(value).astimezone())
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    if isinstance(value, dict) and {"used", "left", "requests", "period"} <= value.keys():
        return _quota_text(value)
    if isinstance(value, dict) and {"networks", "rateLimitPerMinute"} <= value.keys():
        return _restrictions_text(value)
    if (
        isinstance(value, dict)
        and {"keyId", "serviceAccount", "oldSecretWorksUntil"} <= value.keys()
    ):
        return _handover_text(value)
    if isinstance(value, dict):
        return "; ".join(f"{label(k).lower()}: {_text(v) or '-'}" for k, v in value.items())
    return "" if value is None else str(value)


def _restrictions_text(restrictions: dict[str, Any]) -> str:
    """A key's restrictions as the key's page says them: what is open to all named as such
    ("all communities", "any network"), never an empty "-"."""
    parts = []
    for group in ("communities", "pages", "products"):
        ids = restrictions.get(group)
        parts.append(f"all {group}" if ids is None else f"{group} {', '.join(map(str, ids))}")
    networks = restrictions.get("networks") or []
    parts.append(f"networks {', '.join(networks)}" if networks else "any network")
    limit = restrictions.get("rateLimitPerMinute")
    parts.append(f"{limit} requests a minute" if limit else "the default rate limit")
    return "; ".join(parts)


def _handover_text(handover: dict[str, Any]) -> str:
    """Where a handed-over key went, and whether its old secret still works as that key."""
    went = (
        f"to the service account {handover['serviceAccount']} on {_text(handover['at'])}: "
        f"key {handover['keyId']} ({handover['hint']}) replaced it"
    )
    until = handover.get("oldSecretWorksUntil")
    if until:
        return f"{went}; this key's secret works as that key until {_text(until)}"
    return f"{went}; this key's secret no longer works"


_THIS_PERIOD = {"day": "today", "week": "this week", "month": "this month", "never": "in all"}


def _quota_text(use: dict[str, Any]) -> str:
    """A quota's period as the key's page says it: 7,412 of 10,000 used this month, 2,588
    left; refills Dec 28, 2026 14:00 UTC."""
    used = f"{use['used']:,} of {use['requests']:,} used {_THIS_PERIOD.get(use['period'], '')}"
    refill = f"refills {_text(use['refillsAt'])}" if use.get("refillsAt") else "does not refill"
    return f"{used}, {use['left']:,} left; {refill}"


# Said only when there is something to say: most keys were never handed over.
SAID_WHEN_SET = ("handedOverTo", "previousSecretWorksUntil")


def record_text(record: dict[str, Any]) -> str:
    """A record as aligned "Label  value" lines; a key's holder as people read it."""
    values = {k: v for k, v in record.items() if v is not None or k not in SAID_WHEN_SET}
    labels = {name: label(name) for name in values}
    if "holderEmail" in values and _service_account_name(record):
        # A service account's address ends in .invalid and says nothing: its name instead.
        labels["holderEmail"] = "Holder"
        values["holderEmail"] = f"{_service_account_name(record)} (service account)"
    width = max((len(text) for text in labels.values()), default=0)
    return "\n".join(
        f"{labels[name].ljust(width)}  {_text(value)}" for name, value in values.items()
    )


def _service_account_name(row: dict[str, Any]) -> str:
    account = row.get("serviceAccount")
    return str(account.get("name") or "") if isinstance(account, dict) else ""


def when(moment: datetime) -> str:
    """A moment as the dashboard and the e-mails write it, with its zone: Nov 25, 2027 14:02
    CET (here in the terminal's zone)."""
    return f"{moment:%b} {moment.day}, {moment:%Y %H:%M %Z}".rstrip()


def relative(moment: datetime, now: datetime | None = None) -> str:
    """How long ago or ahead as the dashboard says it (apps/common/dates.py `ago`): one unit,
    rounded to the nearest ("in 5 days" for 4 days 23 hours); past 30 days in months, past a
    year in years ("in 3 months" for a key made for 90 days a second ago)."""
    seconds = (moment - (now or datetime.now(UTC))).total_seconds()
    amount = abs(seconds)
    if amount < 60:
        return "just now" if seconds <= 0 else "in a moment"
    count, unit = round(amount / 60), "minute"
    if count >= 60:
        count, unit = round(amount / 3600), "hour"
    if count >= 24 and unit == "hour":
        count, unit = round(amount / 86400), "day"
    if amount > 30 * 86400:
        count, unit = round(amount / 86400 / 30.44), "month"
        if count >= 12:
            count, unit = round(amount / 86400 / 365.25), "year"
    words = f"{count} {unit}{'s' if count != 1 else ''}"
    return f"in {words}" if seconds > 0 else f"{words} ago"


def _cell(value: Any, form: str | None, row: dict[str, Any]) -> str:
    """A table cell as people read it: times to the minute in the terminal's zone (a day alone,
    or how long ago, where the command chose so), cents as money, a key's holder by its service
    account's name when it has one; anything unexpected as it came."""
    if form == "holder":
        return _service_account_name(row) or _text(value)
    if form in ("day", "ago"):
        if value is None:
            return "never"
        try:
            moment = datetime.fromisoformat(value).astimezone()
        except (TypeError, ValueError):
            return _text(value)
        return relative(moment) if form == "ago" else f"{moment:%b} {moment.day}, {moment:%Y}"
    if form == "date-time" and isinstance(value, str):
        try:
            return when(datetime.fromisoformat(value).astimezone())
        except ValueError:
            return value
    if form == "cents" and isinstance(value, int):
        return f"{value / 100:.2f}"
    return _text(value)


def _title(column: dict[str, Any]) -> str:
    name = column["name"]
    if column.get("format") == "cents":
        name = name.removesuffix("Cents")
    if column.get("format") in ("day", "ago"):
        name = name.removesuffix("At")  # EXPIRES, LAST USED
    if column.get("format") == "holder":
        name = "holder"
    return label(name).upper()


TABLE_WIDTH = 100  # as `gh` fits a terminal; `--wide` shows every column in full instead
CLIPPED_NO_NARROWER = 12


def table(
    rows: Iterable[dict[str, Any]], columns: list[dict[str, Any]], width: int | None = TABLE_WIDTH
) -> str:
    """Rows as a plain table with upper-case headers; "(none)" when there are none. Names and
    holders (free text) are cut with "…" where the line would pass `width` (None: never)."""
    rows = list(rows)
    if not rows:
        return "(none)"
    titles = [_title(column) for column in columns]
    cells = [[_cell(row.get(c["name"]), c.get("format"), row) for c in columns] for row in rows]
    widths = [max(len(title), *(len(c[i]) for c in cells)) for i, title in enumerate(titles)]
    if width is not None:
        _fit(widths, [i for i, c in enumerate(columns) if _clippable(c)], width)
    lines = ["  ".join(_clip(t, w) for t, w in zip(titles, widths, strict=True))]
    lines += ["  ".join(_clip(c, w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    return "\n".join(line.rstrip() for line in lines)


def _clippable(column: dict[str, Any]) -> bool:
    return column.get("format") == "holder" or column["name"] in ("name", "userEmail", "path")


def _fit(widths: list[int], clippable: list[int], width: int) -> None:
    """Narrow the widest clippable column, one character at a time, until the line fits."""
    while sum(widths) + 2 * (len(widths) - 1) > width:
        widest = max(clippable, key=lambda i: widths[i], default=None)
        if widest is None or widths[widest] <= CLIPPED_NO_NARROWER:
            return
        widths[widest] -= 1


def _clip(text: str, width: int) -> str:
    return (text[: width - 1] + "…" if len(text) > width else text).ljust(width)
