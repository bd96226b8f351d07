"""The six scopes a key can hold: Read and/or Write on Products, Communities and Pages."""

from collections.abc import Iterable

GROUPS = ("products", "communities", "pages")
ACTIONS = ("read", "write")
ALL_SCOPES: tuple[str, ...] = tuple(f"{group}:{action}" for group in GROUPS for action in ACTIONS)
WRITE_SCOPES: tuple[str, ...] = tuple(s for s in ALL_SCOPES if s.endswith(":write"))
MEMBER_SCOPES: tuple[str, ...] = ("communities:read", "communities:write")


def summarize_scopes(scopes: Iterable[str] | None) -> str:
    """Scopes as people read them: "Full access", "Read everything", or per resource,
    "Products: read & write · Pages: read"; "No permissions" for none."""
    held = set(scopes or ())
    if held == set(ALL_SCOPES):
        return "Full access"
    if held == {f"{group}:read" for group in GROUPS}:
        return "Read everything"
    parts = []
    for group in GROUPS:
        actions = [action for action in ACTIONS if f"{group}:{action}" in held]
        if actions:
            parts.append(f"{group.capitalize()}: {' & '.join(actions)}")
    return " · ".join(parts) or "No permissions"
