"""Walk one warm request as data: which of our files it runs, how often it crosses from one app
to another, and how many times it parses JSON.

    .venv/bin/python bench/walk.py [--mcp]

Serves `GET /api/v1/workspace` (or, with --mcp, `tools/call get_workspace` on /mcp) in process
with Django's test client on a fresh SQLite database, once to warm up, then once under
`sys.setprofile`, which sees every Python call: the files under apps/ and config/ that run,
the moves between apps (one app's function calling another's: apps/<name> or config), and the
calls of `json.loads` from our code (the body's parses).
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mcp", action="store_true")
    parser.add_argument("--moves", action="store_true", help="list each move between apps")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="gatehouse-walk-")
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/walk.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DEBUG"] = "false"
    os.environ["SECURE_SSL_REDIRECT"] = "false"
    os.environ["SECRET_KEY"] = "walk-" + "x" * 60
    os.environ["API_KEY_HASH_SECRET"] = "walk-" + "y" * 60
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    call_command("migrate", verbosity=0)
    from apps.api_keys.services import api_key_create
    from apps.workspaces.models import Membership, Workspace
    from tests.factories import UserFactory

    user = UserFactory()
    workspace = Workspace.objects.create(name="Walk")
    Membership.objects.create(workspace=workspace, user=user, role="owner")
    secret = api_key_create(
        workspace=workspace, user=user, name="walk", scopes=["pages:read"], expires_at=None
    ).secret
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="127.0.0.1")

    def call() -> int:
        if not args.mcp:
            return client.get("/api/v1/workspace").status_code
        body = (
            '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
            '"params":{"name":"get_workspace","arguments":{}}}'
        )
        return client.post(
            "/mcp",
            body,
            content_type="application/json",
            HTTP_ACCEPT="application/json, text/event-stream",
        ).status_code

    assert call() == 200
    files: set[str] = set()
    moves = 0
    parses = 0
    stack: list[str | None] = []
    crossings: list[str] = []
    roots = (str(ROOT / "apps") + "/", str(ROOT / "config") + "/")

    def app_of(filename: str) -> str | None:
        if filename.startswith(roots[0]):
            return "apps." + filename[len(roots[0]) :].split("/", 1)[0]
        if filename.startswith(roots[1]):
            return "config"
        return None

    def profile(frame, event, arg):  # noqa: ANN001, ANN202 - sys.setprofile's signature
        nonlocal moves, parses
        if event == "call":
            code = frame.f_code
            if code.co_name == "loads" and code.co_filename.endswith("json/__init__.py"):
                # Ours: the body's parses (a JSON column decoded by Django is not counted).
                parses += app_of(frame.f_back.f_code.co_filename) is not None
            app = app_of(code.co_filename)
            if app is not None:
                files.add(code.co_filename[len(str(ROOT)) + 1 :])
                caller = next((a for a in reversed(stack) if a is not None), None)
                if caller is not None and caller != app:
                    moves += 1
                    crossings.append(f"{caller} → {app}.{code.co_name}")
            stack.append(app)
        elif event == "return" and stack:
            stack.pop()

    sys.setprofile(profile)
    status = call()
    sys.setprofile(None)
    assert status == 200
    print(
        f"{'tools/call get_workspace' if args.mcp else 'GET /api/v1/workspace'}: "
        f"{len(files)} files, {moves} app-to-app moves, {parses} JSON parses"
    )
    for name in sorted(files):
        print("  ", name)
    if args.moves:
        for crossing in crossings:
            print("  ", crossing)


if __name__ == "__main__":
    main()
