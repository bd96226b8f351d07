"""/metrics, /livez and /readyz (docs/operations.md, "Metrics, probes, logs and traces")."""

import hmac
import ipaddress
import json
import logging
from functools import cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from apps.api.middleware import register_machine_paths
from apps.common.http import client_ip
from apps.common.metrics import registry_for_scrape

from .probes import Check, readiness

logger = logging.getLogger("apps.operations")


@cache
def _networks(allowed: tuple[str, ...]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(network, strict=False) for network in allowed]


def metrics_allowed(request: HttpRequest) -> bool:
    """From METRICS_ALLOWED_NETWORKS, or with `Authorization: Bearer <METRICS_TOKEN>`."""
    token = settings.METRICS_TOKEN
    scheme, _, credential = request.headers.get("Authorization", "").strip().partition(" ")
    if token and scheme.lower() == "bearer":  # RFC 9110 §11.1: the scheme is case-insensitive
        return hmac.compare_digest(credential.strip().encode(), token.encode())
    address = client_ip(request)
    if address is None:
        return False
    ip = ipaddress.ip_address(address)
    return any(ip in network for network in _networks(tuple(settings.METRICS_ALLOWED_NETWORKS)))


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Every process's counters and histograms, and the queue and Redis as they are now."""
    if not metrics_allowed(request):
        return _machine_error(
            "Metrics are served to METRICS_ALLOWED_NETWORKS or with METRICS_TOKEN.", 403
        )
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from .collectors import ScrapeCollector

    body = generate_latest(registry_for_scrape(ScrapeCollector()))
    return _no_store(HttpResponse(body, content_type=CONTENT_TYPE_LATEST))


@require_GET
def livez(request: HttpRequest) -> HttpResponse:
    """The process answers: nothing else is asked (a restart cures nothing else)."""
    return _checks_response([Check("process", True, "answers")])


@require_GET
def readyz(request: HttpRequest) -> HttpResponse:
    """Ready to serve: 503 when a critical check fails, said once as a warning (Django would
    log each probe's 503 as an error: a fault flooded the log with 126 a minute)."""
    checks = readiness()
    response = _checks_response(checks)
    if response.status_code == 503:
        failing = ", ".join(f"{c.name} ({c.detail})" for c in checks if c.critical and not c.ok)
        logger.warning("Not ready: %s", failing)
        response._has_been_logged = True  # type: ignore[attr-defined] # Django's log_response
    return response


def _checks_response(checks: list[Check]) -> HttpResponse:
    """`{"status": ..., "checks": [...]}` with one check a line."""
    ok = all(check.ok for check in checks if check.critical)
    lines = ",\n".join(
        "  " + json.dumps({"check": c.name, "ok": c.ok, "critical": c.critical, "detail": c.detail})
        for c in checks
    )
    body = f'{{"status": "{"ok" if ok else "failing"}", "checks": [\n{lines}\n]}}\n'
    response = HttpResponse(body, content_type="application/json", status=200 if ok else 503)
    return _no_store(response)


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response


def _machine_error(message: str, status: int) -> HttpResponse:
    error = {400: "invalid-input", 403: "forbidden"}.get(status, "internal-error")
    return _no_store(JsonResponse({"error": error, "message": message}, status=status))


# Answered without the dashboard's middleware (sessions, CSRF), as the API is.
register_machine_paths(_machine_error, "/metrics", "/livez", "/readyz")
