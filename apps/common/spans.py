"""Attributes for the request's trace span, from code that must not import OpenTelemetry: a
no-op until apps/operations/tracing.py installs its setter (OTEL_* set), so a request pays
one `is None` when traces are off."""

from collections.abc import Callable

SpanSetter = Callable[[dict[str, str]], None]
_setter: list[SpanSetter] = []


def span_setter_install(setter: SpanSetter | None) -> None:
    """Route span_attributes() to `setter` (None: back to nothing)."""
    _setter.clear()
    if setter is not None:
        _setter.append(setter)


def span_attributes(attributes: dict[str, str]) -> None:
    """Add `attributes` to the current span, when traces are on."""
    if _setter:
        _setter[0](attributes)
