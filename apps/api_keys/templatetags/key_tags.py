"""Template filters for keys: restrictions in words."""

from typing import Any

from django import template

from ..restrictions import Restrictions

register = template.Library()


@register.filter
def restriction_summary(value: Any) -> str:
    """A `restrictions` object (as the API and audit events hold it) as the list reads it:
    "3 communities · 2 networks", or "none"."""
    if not isinstance(value, dict):
        return "none"
    return Restrictions.from_json(value).summary() or "none"
