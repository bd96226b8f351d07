"""Logging filters: no log line carries a secret.

Every handler of settings.LOGGING and both of gunicorn's logs (gunicorn.conf.py) pass their
records through `RedactSecrets`, so a key pasted into a URL path, a query or an exception's
message is written as `gwk_[removed]`. This module imports nothing of Django: gunicorn's master
reads it before the application is loaded."""

import json
import logging
import os
import re
import time
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# A key sent in the URL is refused (400), but the request line is logged before any view runs.
_CREDENTIAL_IN_QUERY = re.compile(r"(?i)\b(access_token|api_key)=[^&\s\"]*")
# What a Gatehouse secret looks like (apps/api_keys/tokens.py, apps/webhooks/secrets.py): a key
# (gwk_, gmk_), a refresh token (grt_), a SCIM token (gst_) or a webhook signing secret
# (whsec_), whole or in part.
# A key's hint (`gwk_…Ab12`) has no letter after the underscore and stays readable.
_SECRET = re.compile(r"(gwk|gmk|grt|gst)_[0-9A-Za-z]{4,}|(whsec)_[0-9A-Za-z+/=%]{4,}")


def redact(text: str) -> str:
    """`text` with every secret-shaped string and credential query value removed."""
    text = _SECRET.sub(lambda found: f"{found.group(1) or found.group(2)}_[removed]", text)
    return _CREDENTIAL_IN_QUERY.sub(r"\1=[removed]", text)


def referer_without_query(referer: str) -> str:
    """A Referer as logged: the page's address without its query and fragment, which may hold
    a code (`/device?user_code=…`) or a token."""
    try:
        parts = urlsplit(referer)
    except ValueError:
        return "-"
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class RedactSecrets(logging.Filter):
    """Remove secrets from a record's message, its traceback and its stack (`redact`); a
    handler filter, so that records propagated from any logger pass through it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit their message: logging reports it
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class DevelopmentNoise(logging.Filter):
    """Drop what buries a development console: the reloader's "Watching for file changes"
    (once per process, twice each: two processes of `dev.py run` print it four times), and,
    with LOG_WEBHOOK_DELIVERIES=0 (`dev.py run` without --verbose), each webhook delivery's
    INFO line and the development receiver's access lines: /dev/webhooks/ shows them all."""

    def __init__(self) -> None:
        super().__init__()
        self.deliveries = os.environ.get("LOG_WEBHOOK_DELIVERIES", "1") != "0"

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "django.utils.autoreload":
            return not str(record.msg).startswith("Watching for file changes")
        if self.deliveries:
            return True
        if record.name == "apps.webhooks":
            return record.levelno > logging.INFO
        if record.name == "django.server":
            return "/dev/webhooks/receive" not in record.getMessage()
        return True


# What the request at hand has learned about itself (apps/metering/facts.py's RequestFacts: its
# request_id, key_id and workspace_id), for the JSON lines written while it is answered.
request_context: ContextVar[Any] = ContextVar("gatehouse_request_context", default=None)
_CONTEXT_FIELDS = ("request_id", "workspace_id", "key_id")
# Structured fields a record may carry (`extra=`): gunicorn's access line, a refused request's.
_EXTRA_FIELDS = ("http", "refusal")


class JsonLines(logging.Formatter):
    """One JSON object a line (LOG_FORMAT=json): time (UTC, ISO 8601), level, logger, message,
    the request's id, workspace id and key id when known, a traceback as `exception`. It reads
    the record as RedactSecrets left it: every handler's filter runs before its formatter."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = request_context.get()
        if context is not None:
            for name in _CONTEXT_FIELDS:
                value = getattr(context, name, None)
                if value is not None:
                    line[name] = value
        for name in _EXTRA_FIELDS:
            value = getattr(record, name, None)
            if isinstance(value, dict):
                line[name] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(self.formatException(record.exc_info))
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = record.stack_info
        return redact(json.dumps(line, ensure_ascii=False, default=str))
