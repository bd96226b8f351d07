"""A mover that fails at every flush (Redis or the database out) says so with its traceback
once a minute, not at every flush of every process (issue 53: 96 tracebacks a minute)."""

import logging

import pytest

from apps.metering import buffer


@pytest.fixture(autouse=True)
def _fresh():
    buffer._mover_errors_at.clear()
    yield
    buffer._mover_errors_at.clear()


def fail(name: str) -> None:
    try:
        raise ConnectionError("Redis is away")
    except ConnectionError:
        buffer._mover_failed(name)


def test_a_failing_move_is_logged_with_its_traceback_once_a_minute(caplog, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(buffer.time, "monotonic", lambda: clock[0])
    caplog.set_level(logging.DEBUG, logger="apps.metering")
    for _ in range(30):  # 30 flushes in 30 seconds
        fail("usage counts")
        clock[0] += 1
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "usage counts" in errors[0].getMessage()
    fail("request log entries")  # another mover says its own
    clock[0] += 31
    fail("usage counts")  # a minute after the first
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 3
