"""Logging filters."""

import logging
import os
import re

# A key sent in the URL is refused (400), but the request line is logged before any view runs.
_CREDENTIAL_IN_QUERY = re.compile(r"(?i)\b(access_token|api_key)=[^&\s\"]*")


class RedactQueryCredentials(logging.Filter):
    """Blank out `access_token=` and `api_key=` values in a record's message and arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = _CREDENTIAL_IN_QUERY.sub(r"\1=[removed]", record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                _CREDENTIAL_IN_QUERY.sub(r"\1=[removed]", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
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
