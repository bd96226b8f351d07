"""The README and the pages of docs/ render as CommonMark (markdown-it-py, as GitHub's renderer
reads them): every code fence closes where it was meant to, and every relative link names a
file that exists."""

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def _tokens(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(path.read_text())


def _links(tokens: list[Token]) -> list[str]:
    found: list[str] = []
    for token in tokens:
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs["href"]))
            if child.type == "image":
                found.append(str(child.attrs["src"]))
    return found


def unclosed_fences(path: Path) -> list[int]:
    """Lines (1-based) of fences that do not close where they were meant to: no closing line,
    or a line inside that starts like a fence (``` with text after it does not close one, so
    the block runs on and swallows the prose and the next fence's opening)."""
    lines = path.read_text().splitlines()
    problems = []
    for token in _tokens(path):
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        closing = lines[end - 1].strip() if end - 1 < len(lines) else ""
        inside = lines[start + 1 : end - 1]
        if (
            end - 1 == start
            or not closing.startswith(token.markup)
            or closing.strip("`~")
            or any(line.lstrip().startswith(token.markup) for line in inside)
        ):
            problems.append(start + 1)
    return problems


def missing_relative_links(path: Path) -> list[str]:
    missing = []
    for href in _links(_tokens(path)):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path:
            continue  # absolute addresses and in-page anchors
        if not (path.parent / unquote(parts.path)).exists():
            missing.append(href)
    return missing


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_fence_closes(document: Path) -> None:
    assert unclosed_fences(document) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file_that_exists(document: Path) -> None:
    assert missing_relative_links(document) == []


def test_an_unclosed_fence_is_found(tmp_path: Path) -> None:
    broken = tmp_path / "broken.md"
    broken.write_text("# T\n\n```sh\nrun\n``` Then prose\n\n```sh\nmore\n```\n")
    assert unclosed_fences(broken) == [3]


def test_a_link_to_a_missing_file_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "here.md").write_text("x")
    page.write_text("[here](here.md) [gone](docs/gone.png) [web](https://example.com) [a](#b)\n")
    assert missing_relative_links(page) == ["docs/gone.png"]
