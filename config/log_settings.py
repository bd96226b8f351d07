"""Django's LOGGING, built here to keep settings.py to what an operator sets."""

from typing import Any

DEVELOPMENT_NOISE = ("django.utils.autoreload", "apps.webhooks")


def log_settings(level: str, log_format: str = "plain") -> dict[str, Any]:
    """One console handler at `level`, every record through the secret redaction filter;
    `log_format` "json" writes one JSON object a line (apps.common.logging.JsonLines)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
            "json": {"()": "apps.common.logging.JsonLines"},
        },
        # Every handler carries it (tests/common/test_logging.py checks): no line holds a secret.
        "filters": {
            "redact_secrets": {"()": "apps.common.logging.RedactSecrets"},
            "development_noise": {"()": "apps.common.logging.DevelopmentNoise"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["redact_secrets"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # The development server's access log: a key sent in a URL never reaches it.
            "django.server": {
                "handlers": ["console"],
                "level": "INFO",
                "propagate": False,
                "filters": ["redact_secrets", "development_noise"],
            },
            # The reloader's "Watching" line, and each webhook delivery unless
            # LOG_WEBHOOK_DELIVERIES says to log them (`dev.py run --verbose`).
            **{name: {"filters": ["development_noise"]} for name in DEVELOPMENT_NOISE},
            # Django's own defaults (a console handler while DEBUG, mail_admins) are replaced: its
            # records go to ours, through the redaction filter, like every other.
            "django": {"handlers": [], "level": "INFO", "propagate": True},
            # The MCP SDK logs two INFO lines per stateless request (its session manager starting
            # and stopping) and httpx2 one per call: noise at this volume, so warnings only. httpx
            # logs each webhook delivery's full URL, which may hold the receiver's own token:
            # apps.webhooks logs each delivery instead, by host. django_tasks logs every task's
            # start and end at INFO: the worker's log would be nothing else. xmlschema (under
            # pysaml2) says at INFO that a schema is "already loaded" with every SAML answer.
            **{
                name: {"level": "WARNING"}
                for name in ("mcp", "httpx2", "httpx", "django_tasks", "xmlschema")
            },
        },
    }
