"""The rows of a list of requests as HTML: a summary line that opens to the request's details.

Written here rather than as a template because the Logs page shows 50 of them, each with ~60
values: Django's template engine took 21 ms for them (in process, warm), which put the page
past 30 ms of server time; this takes about 2 ms. Every value goes through `escape` (or is built
from escaped parts by `breakable`); the markup around them is constant.
`templates/request_log/_requests.html` holds the list around these rows.
"""

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from html import escape as html_escape
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from apps.common.dates import ago, moment_text
from apps.common.text import breakable, holder

from .reading import LogRow

ROW = """
  <li class="request request--{outcome}" data-request-id="{request_id}">
    <details{open}>
      <summary>
        <time class="request-time" datetime="{at_iso}">{at_moment}</time>
        <span class="request-what"><span class="mono request-method">{method}</span> \
<span class="mono clip clip--path" title="{path}">{path}</span>{mcp_badge}</span>
        {key_cell}<span class="request-status"><span class="badge badge--status-{outcome}">\
{status}</span>{error_badge}</span>
        <span class="request-duration muted small">{duration_cell}</span>
      </summary>
      <div class="request-panel">
      <h3 class="request-panel-title">{method} <span class="break">{path_breakable}</span> \
<span class="badge badge--status-{outcome}">{status}</span></h3>
      <dl class="facts facts--request">
        <dt>Request ID</dt><dd><span class="mono" id="{request_id}">{request_id}</span> \
<button type="button" class="btn btn-small copy" data-copy-target="#{request_id}">Copy</button></dd>
        <dt>Time</dt><dd><time datetime="{at_iso}">{at_moment}</time> \
<span class="muted">({at_ago})</span></dd>
        {key_fact}<dt>Door</dt><dd>{door}</dd>
        <dt>Request</dt><dd><span class="mono">{method} {path_breakable}</span> \
<span class="muted small">(the query string is never kept)</span></dd>
        <dt>Operation</dt><dd class="mono">{operation}</dd>
        <dt>Answer</dt><dd>{status}{error_fact}{duration_fact}</dd>
        {object_fact}<dt>From</dt><dd><span class="mono">{client_ip}</span></dd>
        <dt>User agent</dt><dd class="mono small">{user_agent}</dd>
      </dl>
      {permalink}</div>
    </details>
  </li>"""

KEY_CELL = '<span class="request-key clip" title="{name}">{label}</span>\n        '
KEY_FACT = (
    '<dt>Key</dt><dd><a href="{url}">{name}</a> <span class="mono muted nowrap">{hint}</span> '
    "of {email}</dd>\n        "
)
DELETED_KEY_FACT = (
    '<dt>Key</dt><dd><span class="muted">a deleted key ({key_id})</span></dd>\n        '
)
PERMALINK = (
    '<p class="small request-permalink"><a href="?q={0}">Link to this request</a></p>\n      '
)
MCP_BADGE = ' <span class="badge badge--muted">{0}</span>'
TENTHS = Decimal("0.1")


def escape(value: Any) -> str:
    """`value` as text, HTML-escaped as Django's `escape` does (it calls this same function),
    without its lazy-string wrapper, which cost more than the escaping here."""
    return html_escape(str(value))


def _tenths(value: float) -> str:
    """A duration to one decimal, rounded half up as the templates' `floatformat:1` does."""
    try:
        return str(Decimal(repr(value)).quantize(TENTHS, ROUND_HALF_UP))
    except InvalidOperation:  # inf or nan, which no recorded duration is
        return escape(value)


def request_row(row: LogRow, *, show_key: bool, found_id: str = "", key_url: str = "") -> str:
    """One request as a list item: escaped values in constant markup (`key_url`: its key's
    page, for a list that names keys)."""
    entry, key = row.entry, row.key
    local = timezone.localtime(entry.at)
    request_id = escape(entry.request_id)
    error = escape(entry.error)
    key_cell = key_fact = permalink = ""
    if show_key:
        if key is not None:
            name = escape(key.name)
            key_cell = KEY_CELL.format(name=name, label=name)
            key_fact = KEY_FACT.format(
                url=key_url,
                name=name,
                hint=escape(key.hint),
                email=breakable(holder(key.user)),
            )
        else:
            key_cell = KEY_CELL.format(
                name="a deleted key", label='<span class="muted">deleted key</span>'
            )
            key_fact = DELETED_KEY_FACT.format(key_id=escape(entry.key_id))
        permalink = PERMALINK.format(request_id)
    if entry.duration_ms is None:
        duration_cell = "no answer recorded"
        duration_fact = (
            ' <span class="muted">(the server stopped before its answer was recorded)</span>'
        )
    else:
        duration_cell = f"{_tenths(entry.duration_ms)} ms"
        duration_fact = f" in {duration_cell}"
    return ROW.format(
        outcome=entry.outcome,
        request_id=request_id,
        open=" open data-found" if found_id and entry.request_id == found_id else "",
        at_iso=local.isoformat(),
        at_moment=escape(moment_text(local)),
        at_ago=escape(ago(entry.at)),
        method=escape(entry.method),
        path=escape(entry.path),
        path_breakable=breakable(entry.path),
        mcp_badge=MCP_BADGE.format(escape(entry.operation.replace("mcp:", "")))
        if entry.door == "mcp"
        else "",
        key_cell=key_cell,
        status=entry.status,
        error_badge=f' <span class="mono small">{error}</span>' if error else "",
        error_fact=f' <span class="mono">{error}</span>' if error else "",
        duration_cell=duration_cell,
        duration_fact=duration_fact,
        key_fact=key_fact,
        door="MCP" if entry.door == "mcp" else "HTTP API",
        operation=escape(entry.operation),
        object_fact=(
            f'<dt>Object</dt><dd class="mono">{escape(entry.object_id)}</dd>\n        '
            if entry.object_id
            else ""
        ),
        client_ip=escape(entry.client_ip or "unknown address"),
        user_agent=breakable(entry.user_agent or "none sent"),
        permalink=permalink,
    )


def request_rows(rows: list[LogRow], *, show_key: bool, found_id: str = "") -> SafeString:
    """The list's items, in the order given."""
    urls: dict[int, str] = {}
    if show_key:
        for row in rows:
            if row.key is not None and row.entry.key_id not in urls:
                urls[row.entry.key_id] = reverse("key_pages:detail", args=[row.entry.key_id])
    html = "".join(
        request_row(
            row, show_key=show_key, found_id=found_id, key_url=urls.get(row.entry.key_id, "")
        )
        for row in rows
    )
    return mark_safe(html)  # noqa: S308 (every value escaped in request_row)
