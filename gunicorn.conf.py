"""gunicorn reads this file from the working directory.

If the access log is turned on (--access-logfile), it logs the path without the query string
(%(U)s rather than the request line %(r)s): a key someone put in a URL must not land in a log;
and it ends with the answer's Request-Id, so support can join a user's report to the line.
Both of gunicorn's logs pass through the redaction filter the Django logs use (a key pasted
into a path is written `gwk_[removed]`), and the Referer is logged without its query.
"""

import json
import os
import sys

from gunicorn import util
from gunicorn.glogging import Logger

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # before gunicorn's own chdir
from apps.common.logging import RedactSecrets, referer_without_query  # noqa: E402

access_log_format = (
    '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(f)s" "%(a)s" %({request-id}o)s'
)


class RedactingLogger(Logger):
    """gunicorn's logger, with every handler of its error and access logs filtered by
    RedactSecrets, and the Referer atoms without their query (`/device?user_code=…`)."""

    def setup(self, cfg) -> None:  # type: ignore[no-untyped-def]
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                if not any(isinstance(f, RedactSecrets) for f in handler.filters):
                    handler.addFilter(RedactSecrets())

    def atoms(self, resp, req, environ, request_time):  # type: ignore[no-untyped-def]
        atoms = super().atoms(resp, req, environ, request_time)
        for name in ("f", "{referer}i", "{http_referer}e"):
            if atoms.get(name, "-") != "-":
                atoms[name] = referer_without_query(atoms[name])
        return atoms


logger_class = RedactingLogger

# The longest request line gunicorn allows (its default is 4094): a GET /api/v1/keys with every
# filter at its longest stays far below it, and a longer one is refused before Django.
limit_request_line = 8190

# What gunicorn answers itself, before Django sees the request (a request line over the limit,
# headers too large, a malformed request), in the API's JSON rather than gunicorn's HTML page:
# every answer of this server, errors included, is JSON. gunicorn has no setting for that page,
# so its one writer is replaced.
GUNICORN_REFUSALS = {
    403: "forbidden-request",
    414: "uri-too-long",
    417: "expectation-failed",
    431: "headers-too-large",
    500: "internal-error",
    501: "not-implemented",
}


def write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    from apps.api.errors import DEFAULT_MESSAGES  # in the worker, where the app is loaded
    from apps.metering.facts import new_request_id

    error = GUNICORN_REFUSALS.get(status_int, "bad-request")
    body = json.dumps({"error": error, "message": DEFAULT_MESSAGES[error]}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"Request-Id: {new_request_id()}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin1") + body)


util.write_error = write_json_error
