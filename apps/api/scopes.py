"""The scopes a key can hold: Read and/or Write on Products, Communities and Pages, and for
owners' and admins' workspace keys, on the API keys themselves (docs/product.md §2)."""

from collections.abc import Iterable

GROUPS = ("products", "communities", "pages")
ACTIONS = ("read", "write")
ALL_SCOPES: tuple[str, ...] = tuple(f"{group}:{action}" for group in GROUPS for action in ACTIONS)
WRITE_SCOPES: tuple[str, ...] = tuple(s for s in ALL_SCOPES if s.endswith(":write"))
MEMBER_SCOPES: tuple[str, ...] = ("communities:read", "communities:write")
KEY_SCOPES: tuple[str, ...] = ("keys:read", "keys:write")
EVERY_SCOPE: tuple[str, ...] = ALL_SCOPES + KEY_SCOPES


def summarize_scopes(scopes: Iterable[str] | None) -> str:
    """Scopes as people read them: "Full access", "Read everything", or per resource,
    "Products: read & write · Pages: read", then "API keys: read" when held; "No permissions"
    for none."""
    held = set(scopes or ())
    keys = [action for action in ACTIONS if f"keys:{action}" in held]
    parts = []
    if held >= set(ALL_SCOPES):
        parts.append("Full access")
    elif held & set(ALL_SCOPES) == {f"{group}:read" for group in GROUPS}:
        parts.append("Read everything")
    else:
        for group in GROUPS:
            actions = [action for action in ACTIONS if f"{group}:{action}" in held]
            if actions:
                parts.append(f"{group.capitalize()}: {' & '.join(actions)}")
    if keys:
        parts.append(f"API keys: {' & '.join(keys)}")
    return " · ".join(parts) or "No permissions"
