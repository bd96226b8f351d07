"""The lists docs keep by hand cannot drift: docs/architecture.md's layer diagram and Layout
against pyproject.toml's import contract and the tree, its count of mypy's exceptions, and
docs/mcp.md's tool table against the MCP server's registry."""

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def contract_layers() -> list[set[str]]:
    """The layers of pyproject.toml's contract, top first, each as its set of packages."""
    contract = next(
        c for c in PYPROJECT["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
    )
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def code_block_after(heading: str) -> str:
    rest = ARCHITECTURE.split(heading, 1)[1]
    return rest.split("```", 2)[1]


def diagram_layers() -> list[set[str]]:
    """The diagram's layers, top first: the packages named between two rules."""
    chunks = re.split(r"\n─+\n", code_block_after("## Layers: every import points down"))
    return [
        {
            "config" if name == "config/" else name.replace("/", ".")
            for name in re.findall(r"^config/|apps/\w+", chunk, re.M)
        }
        for chunk in chunks
    ]


def app_folders() -> set[str]:
    return {
        f"apps.{path.parent.name}"
        for path in (ROOT / "apps").glob("*/__init__.py")
        if path.parent.name != "__pycache__"
    }


def test_the_layer_diagram_is_the_import_contract():
    assert diagram_layers() == contract_layers()


def test_every_app_is_in_the_import_contract():
    in_contract = set().union(*contract_layers()) - {"config"}
    assert in_contract == app_folders()


def test_the_layout_names_every_app_once_in_the_order_of_the_layers():
    named = re.findall(r"^apps/(\w+)", code_block_after("## Layout"), re.M)
    assert sorted(f"apps.{name}" for name in named) == sorted(app_folders())
    rank = {app: i for i, layer in enumerate(contract_layers()) for app in layer}
    ranks = [rank[f"apps.{name}"] for name in named]
    assert ranks == sorted(ranks), "the Layout lists apps out of the layers' order"


def test_the_count_of_mypys_exceptions_is_pyprojects():
    said = re.search(r"\((\w+) exceptions? in `pyproject.toml`", ARCHITECTURE)
    assert said is not None
    mypy = PYPROJECT["tool"]["mypy"]
    relaxed = [
        name
        for name, value in mypy.items()
        if (name.startswith(("disallow_", "warn_", "strict_")) and value is False)
        or (name.startswith(("ignore_", "allow_")) and value is True)
    ]
    assert NUMBERS[said.group(1)] == len(relaxed), relaxed


def test_the_docs_name_no_test_file_that_does_not_exist():
    for text in (ARCHITECTURE, (ROOT / "pyproject.toml").read_text()):
        for path in re.findall(r"tests/[\w/]+\.py", text):
            assert (ROOT / path).exists(), path


def test_the_mcp_tool_table_is_the_servers(db):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import docs_lists
    finally:
        sys.path.pop(0)
    current = (ROOT / "docs" / "mcp.md").read_text()
    assert docs_lists.mcp_doc_expected(current) == current, (
        "run .venv/bin/python scripts/docs_lists.py --write"
    )
    from config.mcp import TOOLS

    listed = re.findall(r"^\| `(\w+)` \|", current, re.M)
    assert listed == list(TOOLS)
