"""Count the CPU instructions one request costs, authenticated and not, in one process.

Throughput on a shared VM swings by +-20% between identical runs; instruction counts do not.
`python3 dev.py bench --instructions` runs this under callgrind (which counts instructions
exactly) with BENCH_REQUESTS=200 and =0, for both kinds, and prints the per-request difference.

With ARG "auth", "plain" or "mcp" (`tools/call get_workspace` on /mcp) it serves N requests of
one kind in process through Django's WSGI handler, so the counts include the whole middleware
stack but no network.
"""

import io
import os
import sys

N = int(os.environ.get("BENCH_REQUESTS", "300"))
MCP_CALL = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    b'"params":{"name":"get_workspace","arguments":{}}}'
)


def main(kind: str) -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:0] = [root, os.path.join(root, "scripts")]
    from local_server import production_like_env

    os.environ.update(
        production_like_env(
            "instr", DJANGO_SETTINGS_MODULE="bench.settings", API_RATE_LIMIT_PER_MINUTE="1000000000"
        )
    )
    import django

    django.setup()
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command

    from apps.accounts.models import User
    from apps.api_keys.services import api_key_create
    from apps.workspaces.services import workspace_create

    call_command("migrate", verbosity=0)
    user = User.objects.create_user(email=f"instr-{os.getpid()}@example.com")
    workspace = workspace_create(name="Instructions", owner=user)
    created = api_key_create(
        workspace=workspace, user=user, name="k", scopes=["products:read"], expires_at=None
    )
    app = WSGIHandler()
    environ = {
        "REQUEST_METHOD": "GET",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
    }
    content = b""
    if kind == "auth":
        environ.update(PATH_INFO="/api/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {created.secret}")
    elif kind == "mcp":
        content = MCP_CALL
        environ.update(
            PATH_INFO="/mcp",
            REQUEST_METHOD="POST",
            CONTENT_TYPE="application/json",
            CONTENT_LENGTH=str(len(content)),
            HTTP_ACCEPT="application/json, text/event-stream",
            HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
            HTTP_AUTHORIZATION=f"Bearer {created.secret}",
        )
    else:
        environ.update(PATH_INFO=f"/bench/workspace/{created.key.pk}")

    def serve() -> None:
        wsgi_input = {"wsgi.input": io.BytesIO(content)}
        body = app(dict(environ, **wsgi_input), lambda status, headers: None)
        assert b"workspaceId" in b"".join(body), "unexpected response"

    for _ in range(50):  # warm up: connection, caches, lazy imports, first last-use write
        serve()
    for _ in range(N):
        serve()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "auth")
