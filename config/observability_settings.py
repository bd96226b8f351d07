"""What operators set for watching Gatehouse: who may read /metrics, whether workspaces are
labels, the log format (docs/operations.md, "Metrics, probes, logs and traces")."""

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_list
from .log_settings import log_settings

__all__ = [
    "LOGGING",
    "LOG_FORMAT",
    "METRICS_ALLOWED_NETWORKS",
    "METRICS_TOKEN",
    "METRICS_WORKSPACE_LABELS",
    "SECURE_REDIRECT_EXEMPT",
]
LOG_FORMATS = ("plain", "json")


def metrics_networks() -> list[str]:
    """METRICS_ALLOWED_NETWORKS: the addresses /metrics answers without a token (loopback by
    default), each checked."""
    networks = env_list("METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"METRICS_ALLOWED_NETWORKS holds {network!r}, which is not a network "
                "(write e.g. 10.0.0.0/8,127.0.0.1)."
            ) from None
    return networks


def log_format() -> str:
    value = os.environ.get("LOG_FORMAT", "plain").strip().lower() or "plain"
    if value not in LOG_FORMATS:
        raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {value!r}.")
    return value


METRICS_ALLOWED_NETWORKS = metrics_networks()
# A scraper from elsewhere sends `Authorization: Bearer <token>`; empty: none is accepted.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
# Workspace ids as labels (gatehouse_workspace_requests_total): a series per workspace, so off
# unless an operator with few workspaces asks for it.
METRICS_WORKSPACE_LABELS = env_bool("METRICS_WORKSPACE_LABELS", False)
LOG_FORMAT = log_format()
# Scrapers and probes call from inside the network over plain HTTP: no redirect to HTTPS.
SECURE_REDIRECT_EXEMPT = [r"^(metrics|livez|readyz)$"]
LOGGING = log_settings(os.environ.get("LOG_LEVEL", "INFO"), LOG_FORMAT)
