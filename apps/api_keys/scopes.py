"""The six scopes a key can hold: Read and/or Write on Products, Communities and Pages."""

GROUPS = ("products", "communities", "pages")
ACTIONS = ("read", "write")
ALL_SCOPES: tuple[str, ...] = tuple(f"{group}:{action}" for group in GROUPS for action in ACTIONS)
WRITE_SCOPES: tuple[str, ...] = tuple(s for s in ALL_SCOPES if s.endswith(":write"))
MEMBER_SCOPES: tuple[str, ...] = ("communities:read", "communities:write")
