"""Django's PostgreSQL backend, with every wait for the database's answer bounded.

A server (or PgBouncer) that stops answering on a connection already open is not seen by the
kernel: it keeps accepting the bytes, so neither libpq's `tcp_user_timeout` nor keepalives fire,
and a request would wait until the app server's own timeout killed the worker, every worker in
turn (issue 53, item 2). Here a query's answer is waited for at most `answer_timeout` seconds
(DATABASE_ANSWER_TIMEOUT_SECONDS); then the connection is closed, its state being unknown, and
the error is a wait that ran out (`apps.common.retry.waited_out`): the API answers 503
`unavailable` with Retry-After at once. `manage.py migrate` lifts the bound (`unbounded_waits`),
as an index built on a large table may take longer."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db.backends.postgresql import base

ANSWER_TIMEOUT_OPTION = "answer_timeout"


class AnswerTimedOut(psycopg.OperationalError):
    """The database did not answer within the bound; the connection is closed."""


class BoundedConnection(psycopg.Connection):
    """A psycopg connection whose waits for an answer give up after `answer_timeout` seconds."""

    answer_timeout: float | None = None
    lifted = False  # set for the whole process by `unbounded_waits`

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        if timeout is None and not self.lifted:
            timeout = self.answer_timeout
        try:
            return super().wait(gen, interval, timeout)
        except psycopg.errors._WaitTimeout as error:
            # The answer may still come, or never: nothing more can be said on this connection.
            self.pgconn.finish()
            raise AnswerTimedOut(
                f"the database did not answer within {timeout:g} s: timeout expired"
            ) from error


class _Psycopg:
    """psycopg as Django's backend reaches it (`DatabaseWrapper.Database`), connecting with
    `BoundedConnection`."""

    connect = staticmethod(BoundedConnection.connect)

    def __getattr__(self, name: str) -> Any:
        return getattr(psycopg, name)


class DatabaseWrapper(base.DatabaseWrapper):
    Database = _Psycopg()  # type: ignore[assignment]
    health_check_done: bool  # Django's, set at each request's start

    def get_connection_params(self) -> dict[str, Any]:
        params = super().get_connection_params()
        params.pop(ANSWER_TIMEOUT_OPTION, None)  # ours, not libpq's
        return params

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        connection.answer_timeout = self.settings_dict["OPTIONS"].get(ANSWER_TIMEOUT_OPTION)
        return connection

    def close_if_health_check_failed(self) -> None:
        """Django's check of a reused connection before a request's first query (`SELECT 1`),
        except that a check the database did not answer fails the request at once, as its
        first query would have, instead of connecting again to wait once more (the connect
        timeout on top of the bound)."""
        if (
            self.connection is None
            or not self.settings_dict["CONN_HEALTH_CHECKS"]
            or self.health_check_done
        ):
            return
        try:
            with self.connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except AnswerTimedOut as error:
            self.close()
            with self.wrap_database_errors:
                raise error
        except psycopg.Error:
            self.close()
        self.health_check_done = True


@contextmanager
def unbounded_waits() -> Iterator[None]:
    """Wait for the database's answers as long as they take, in this process, meanwhile."""
    BoundedConnection.lifted = True
    try:
        yield
    finally:
        BoundedConnection.lifted = False
