"""Whether the OTEL_* variables ask for traces, read without importing OpenTelemetry (config/wsgi.py
asks before it loads apps/operations/tracing.py)."""

from collections.abc import Mapping


def tracing_wanted(environ: Mapping[str, str]) -> bool:
    """Whether the OTEL_* variables ask for traces: an OTLP endpoint (for all signals or for
    traces), or OTEL_TRACES_EXPORTER=console; never with OTEL_SDK_DISABLED=true or
    OTEL_TRACES_EXPORTER=none."""
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter == "none":
        return False
    if exporter == "console":
        return True
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
