"""The lists the docs keep that the code also holds, written from the code.

    .venv/bin/python scripts/docs_lists.py          # say which doc block is out of date
    .venv/bin/python scripts/docs_lists.py --write  # rewrite them

Today: docs/mcp.md's table of tools, between `<!-- tools -->` and `<!-- /tools -->`, from the
MCP door's registry. tests/architecture/test_docs.py fails when a block differs from this.
"""

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MCP_DOC = ROOT / "docs" / "mcp.md"
BLOCK = re.compile(r"(<!-- tools -->\n)(.*?)(<!-- /tools -->)", re.S)


def _setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def mcp_tool_table() -> str:
    """One row per tool the MCP server has: its name, what a key needs, what it does."""
    from config.mcp import TOOLS
    from config.operations import OPERATIONS_BY_NAME

    rows = ["| tool | a key needs | what it does |", "|---|---|---|"]
    for name in TOOLS:
        op = OPERATIONS_BY_NAME[name]
        needs = op.needs
        need = (
            "any write scope"
            if needs.any_write
            else (f"`{needs.scope}`" if needs.scope else "any key")
        )
        if needs.roles:
            need += f", held by an {' or '.join(needs.roles)}"
        if needs.members:
            need += " (member keys too)"
        first = op.summary.split(". ")[0].rstrip(".") + "."
        rows.append(f"| `{name}` | {need} | {first} |")
    return "\n".join(rows) + "\n"


def mcp_doc_expected(text: str) -> str:
    """docs/mcp.md as it should read, its tool table written from the registry."""
    if not BLOCK.search(text):
        raise SystemExit("docs/mcp.md has no <!-- tools --> … <!-- /tools --> block")
    return BLOCK.sub(lambda m: m.group(1) + mcp_tool_table() + m.group(3), text)


def main() -> None:
    _setup()
    current = MCP_DOC.read_text()
    expected = mcp_doc_expected(current)
    if expected == current:
        print("docs/mcp.md: up to date")
        return
    if "--write" in sys.argv:
        MCP_DOC.write_text(expected)
        print("docs/mcp.md: tool table rewritten")
        return
    print("docs/mcp.md: the tool table differs from the server's tools; run with --write")
    sys.exit(1)


if __name__ == "__main__":
    main()
