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


def _access(held: set[str], group: str) -> str:
    """A group's access in the create form's words: Read, Write, Read & write, or ""."""
    read, write = f"{group}:read" in held, f"{group}:write" in held
    return "Read & write" if read and write else "Read" if read else "Write" if write else ""


def summarize_scopes(scopes: Iterable[str] | None) -> str:
    """Scopes in the create form's words, one name per concept: "Full access" for every
    scope, API keys included; "Read & write: all resources" or "Read: all resources" when the
    resources are alike; otherwise per resource, "Products: Read & write · Pages: Read"; then
    "API keys: Read" when held; "No permissions" for none."""
    held = set(scopes or ())
    if held >= set(EVERY_SCOPE):
        return "Full access"
    accesses = {group: _access(held, group) for group in GROUPS}
    parts = []
    if len(set(accesses.values())) == 1 and accesses["products"]:
        parts.append(f"{accesses['products']}: all resources")
    else:
        parts.extend(
            f"{group.capitalize()}: {access}" for group, access in accesses.items() if access
        )
    if keys := _access(held, "keys"):
        parts.append(f"API keys: {keys}")
    return " · ".join(parts) or "No permissions"
