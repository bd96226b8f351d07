"""Template filters for keys: restrictions in words, hints that do not wrap."""

import re
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import mark_safe

from apps.api_keys.restrictions import Restrictions

register = template.Library()


@register.filter
def restriction_summary(value: Any) -> str:
    """A `restrictions` object (as the API and audit events hold it) as the list reads it:
    "3 communities · 2 networks", or "none"."""
    if not isinstance(value, dict):
        return "none"
    return Restrictions.from_json(value).summary() or "none"


HINT = re.compile(r"\b[a-z]{2,4}_…[A-Za-z0-9]{4}\b")


@register.filter
def hints_unbroken(value: Any) -> str:
    """Text in which each key hint (`gwk_…Qt40`) stays on one line: a browser may otherwise
    wrap after the ellipsis."""
    return mark_safe(  # noqa: S308 - the text is escaped first; only our own span is added
        HINT.sub(lambda m: f'<span class="nowrap">{m.group(0)}</span>', escape(str(value)))
    )


@register.filter
def scope_label(scope: str) -> str:
    """A scope in the create form's words: `products:read` → "Products: Read"."""
    group, _, action = str(scope).partition(":")
    name = "API keys" if group == "keys" else group.capitalize()
    return f"{name}: {action.capitalize()}"


@register.filter
def state_label(state: str) -> str:
    """A key's state as its badge says it: a key waiting for approval reads "Waiting", as the
    Approvals page that lists it does (the API's word stays "pending"); a suspended one says
    who suspended its holder (docs/product.md §16)."""
    if state == "pending":
        return "Waiting"
    if state == "suspended":
        return "Suspended (identity provider)"
    return str(state).capitalize()


IDLE_SHOWN_AFTER_DAYS = 30


@register.filter
def idle_days(key: Any) -> int | None:
    """How many whole days an active key has gone unused (since its creation if never used),
    when that is 30 or more: the list's "Idle N days" (docs/product.md §13)."""
    if getattr(key, "state", None) != "active":
        return None
    days = (timezone.now() - (key.last_used_at or key.created_at)).days
    return days if days >= IDLE_SHOWN_AFTER_DAYS else None
