from django.http import HttpRequest

from apps.common.validation import InvalidInput

DEFAULT_LIMIT = 50
MAX_LIMIT = 100


def list_limit(request: HttpRequest) -> int:
    """The `limit` query parameter of a list endpoint: 1..100, default 50."""
    raw = request.GET.get("limit")
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidInput("limit", f"limit must be a whole number from 1 to {MAX_LIMIT}.")
    return int(raw)
