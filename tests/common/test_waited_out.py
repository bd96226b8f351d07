"""A wait for the database that ran out (PgBouncer's query_wait_timeout, the connect timeout) is
answered 503 at once, never asked again: a retry would wait as long again (the fault run's row
11 saw 14.8 s for a 10 s bound). A dropped connection is still asked again, once."""

from unittest import mock

import pytest
from django.db import OperationalError

from apps.api_keys import lookup
from apps.common.retry import Unavailable, run_retried, waited_out
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)  # outside a transaction: retried


def gone(message: str, sqlstate: str = "08P01") -> OperationalError:
    """The error Django raises for psycopg's, with the server's SQLSTATE (class 08: the
    connection)."""
    error = OperationalError(message)
    error.__cause__ = type("PsycopgError", (Exception,), {"sqlstate": sqlstate})()
    return error


PGBOUNCER_GAVE_UP = "ERROR:  query_wait_timeout\nSSL connection has been closed unexpectedly"
CONNECT_TIMED_OUT = (
    'connection failed: connection to server at "10.0.0.5", port 6432 failed: timeout expired'
)


def test_what_counts_as_a_wait_that_ran_out():
    assert waited_out(OperationalError(PGBOUNCER_GAVE_UP))
    assert waited_out(OperationalError(CONNECT_TIMED_OUT))
    assert not waited_out(OperationalError("terminating connection due to administrator command"))
    assert not waited_out(ValueError("query_wait_timeout"))  # not the database's


def test_the_key_lookup_does_not_ask_again_after_a_wait_ran_out(client):
    secret = make_key(scopes=["pages:read"]).secret
    calls = []

    def gave_up(*args, **kwargs):
        calls.append(1)
        raise gone(PGBOUNCER_GAVE_UP)

    with mock.patch.object(lookup, "_fetch", gave_up):
        answer = client.get("/api/v1/workspace", **auth(secret))
    assert answer.status_code == 503 and answer.json()["error"] == "unavailable"
    assert answer["Retry-After"]
    assert len(calls) == 1


def test_the_key_lookup_asks_again_once_after_a_dropped_connection(client):
    secret = make_key(scopes=["pages:read"]).secret
    real = lookup._fetch
    calls = []

    def dropped_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise gone("server closed the connection unexpectedly", "08006")
        return real(*args, **kwargs)

    with mock.patch.object(lookup, "_fetch", dropped_once):
        assert client.get("/api/v1/workspace", **auth(secret)).status_code == 200
    assert len(calls) == 2


def test_an_operation_is_not_run_again_after_a_wait_ran_out():
    runs = []

    def work():
        runs.append(1)
        raise gone(PGBOUNCER_GAVE_UP)

    with pytest.raises(Unavailable):
        run_retried(work)
    assert runs == [1]
