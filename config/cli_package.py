"""The `gatehouse` CLI as a source package, served by the server it talks to:
`pipx install <origin>/cli/gatehouse.tar.gz` (or pip) works for anyone who can reach the
dashboard, without a checkout. Built in memory from cli/ once per process."""

import functools
import io
import tarfile
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

CLI_DIR = Path(__file__).resolve().parent.parent / "cli"
PACKAGE_NAME = "gatehouse-cli"


def _wanted(path: Path) -> bool:
    parts = set(path.relative_to(CLI_DIR).parts)
    return not parts & {"build", "__pycache__"} and not any(p.endswith(".egg-info") for p in parts)


@functools.cache
def cli_sdist() -> bytes:
    """A tar.gz of cli/ (pyproject.toml, the package and its command table) pip can build."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(CLI_DIR.rglob("*")):
            if path.is_file() and _wanted(path):
                name = f"{PACKAGE_NAME}/{path.relative_to(CLI_DIR)}"
                info = archive.gettarinfo(str(path), arcname=name)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0  # the same bytes every time
                with path.open("rb") as file:
                    archive.addfile(info, file)
    return buffer.getvalue()


@require_GET
def cli_download(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(cli_sdist(), content_type="application/gzip")
    response["Content-Disposition"] = 'attachment; filename="gatehouse.tar.gz"'
    return response
