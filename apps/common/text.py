"""Text filters every template has (a built-in, as `apps.common.dates` is): `|breakable` lets a
long address or URL wrap at its own seams ("owner@" / "demo.gatehouse.test") instead of
mid-word ("owner@demo.gateho" / "use.test"); `|json_pretty` indents a JSON body to read."""

import html
import json
import re
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# After these a line may break: @ . / and the separators of a query string.
SEAMS = re.compile(r"([@./?&=#])")


@register.filter
def breakable(value: object) -> SafeString:
    """`value` escaped, with a <wbr> (a line-break opportunity, invisible when copied) after
    each seam."""
    parts = SEAMS.split("" if value is None else str(value))
    # split() with a group keeps each seam as its own part: every odd part is one.
    # html.escape is what Django's escape calls, without its lazy-string wrapper (a list of 50
    # requests calls this 150 times).
    text = "".join(html.escape(part) + ("<wbr>" if n % 2 else "") for n, part in enumerate(parts))
    return mark_safe(text)  # noqa: S308 (every part escaped above)


@register.filter
def json_pretty(value: object) -> str:
    """A JSON document indented two spaces a level; anything else (an HTML error page) as it
    came. Autoescaped like any other value."""
    text = "" if value is None else str(value)
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


@register.filter
def holder(user: Any) -> str:
    """Who holds a key, as people read it: a person's e-mail address, a service account's name
    (its address ends in .invalid and says nothing; docs/product.md §12)."""
    if user is None:
        return ""
    if getattr(user, "is_service_account", False):
        return str(getattr(user, "full_name", "") or "Service account")
    return str(getattr(user, "email", ""))
