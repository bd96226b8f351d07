"""What Django cannot even make a request of, answered at the WSGI door: a Content-Type whose
charset holds a NUL byte makes `WSGIRequest()` raise before any middleware (issue 49), and
the server would answer its own plain 500."""

import json
from collections.abc import Callable, Iterable
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
MACHINE_PREFIXES = ("/api/", "/mcp", "/oauth/", "/.well-known/")


def refuse_unreadable_requests(application: WsgiApp) -> WsgiApp:
    """`application` behind a check of what Django would fail to parse: 400, in the API's JSON
    on the paths programs call, else in plain words."""

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if "\x00" not in environ.get("CONTENT_TYPE", ""):
            return application(environ, start_response)
        message = "The Content-Type header holds a NUL byte."
        if str(environ.get("PATH_INFO", "")).startswith(MACHINE_PREFIXES):
            body = json.dumps({"error": "invalid-input", "message": message}).encode()
            kind = "application/json"
        else:
            body, kind = message.encode(), "text/plain; charset=utf-8"
        start_response(
            "400 Bad Request",
            [
                ("Content-Type", kind),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-store"),
            ],
        )
        return [body]

    return wsgi
