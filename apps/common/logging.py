"""Logging filters."""

import logging
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
