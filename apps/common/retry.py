"""A database connection that drops under a request (a restart, a failover, a terminated
backend): whatever ran before the COMMIT is run again, once, on a fresh connection; a second
drop, or one after a COMMIT was sent (its outcome unknown), is `Unavailable`, which the API
answers 503 `unavailable` and the dashboard with a page saying to try again, both with
Retry-After. Never a 500 (issue 42; docs/operations.md, "What each part's failure costs").

A deadlock or a serialization failure (40P01, 40001) is the same to a caller: PostgreSQL rolled
the transaction back whole, so it is run again once, then `Unavailable` (issue 49)."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    InterfaceError,
    InternalError,
    OperationalError,
    connections,
)
from django.db.backends.base.base import BaseDatabaseWrapper

T = TypeVar("T")

RETRY_AFTER_SECONDS = 2
# The SQLSTATEs of a connection that went away: class 08 (connection exception), and a backend
# terminated or shutting down (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect).
GONE_STATES = ("08", "57P01", "57P02", "57P03")
# A transaction PostgreSQL chose to roll back for another's sake: a deadlock, a serialization
# failure. Nothing of it was written, even when it failed at its COMMIT.
CONFLICT_STATES = ("40P01", "40001")
# Statements that change nothing: outside a transaction, any other one commits as it runs.
READS = ("SELECT", "SHOW", "EXPLAIN", "VALUES")


class Unavailable(Exception):
    """The database dropped the connection again on the retry, or after a COMMIT was sent
    (`unsure`: the change may have been made)."""

    def __init__(self, message: str, *, unsure: bool) -> None:
        super().__init__(message)
        self.unsure = unsure


def connection_lost(error: BaseException, using: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether `error` is the database going away (rather than a mistake of the code): the
    server's SQLSTATE says so, or the driver failed without an answer from the server (a socket
    closed; through PgBouncer, a COMMIT answered twice), or the connection no longer answers.
    The error decides first: asking the connection afterwards is no proof, as Django drops a
    connection whose ROLLBACK failed and opens a new one, and PgBouncer hands out another
    server, so that the question is answered."""
    if not isinstance(error, DatabaseError):
        return False
    cause = error.__cause__
    state = getattr(cause, "sqlstate", None)  # psycopg's errors have one; SQLite's do not
    if state:
        return str(state).startswith(GONE_STATES)
    if hasattr(cause, "sqlstate") and isinstance(
        error, (OperationalError, InterfaceError, InternalError)
    ):
        return True  # psycopg's own error: nothing the server said
    if isinstance(error, InterfaceError):
        return True
    return not connections[using].is_usable()


# A wait that ran out: PgBouncer gave up finding a server (`query_wait_timeout`), or connecting
# took longer than DATABASE_CONNECT_TIMEOUT_SECONDS. The database is away, not one connection:
# asking again would double the wait (14.8 s for a 10 s bound in the fault run's row 11).
WAITED_OUT = ("query_wait_timeout", "timeout expired")


def waited_out(error: BaseException) -> bool:
    """Whether `error` is a bounded wait for the database that ran out: answered 503 at once,
    never retried."""
    text = str(error).lower()
    return isinstance(error, DatabaseError) and any(words in text for words in WAITED_OUT)


def transaction_conflict(error: BaseException) -> bool:
    """Whether `error` is PostgreSQL rolling a transaction back for a deadlock or a
    serialization failure: safe to run again from its start."""
    if not isinstance(error, DatabaseError):
        return False
    return str(getattr(error.__cause__, "sqlstate", "") or "") in CONFLICT_STATES


def retryable(error: BaseException, using: str = DEFAULT_DB_ALIAS) -> bool:
    """A lost connection or a rolled-back conflict: what `run_retried` runs again."""
    return transaction_conflict(error) or connection_lost(error, using)


@contextmanager
def commits_watched(connection: BaseDatabaseWrapper) -> Iterator[list[bool]]:
    """`[True]` once `connection` sent a COMMIT, or a write outside a transaction (which commits
    as it runs): from then on a dropped connection leaves the outcome unknown."""
    sent = [False]
    commit = connection.commit
    had = connection.__dict__.get("commit")  # a watch around this one

    def watched_commit() -> None:
        before = sent[0]
        sent[0] = True
        try:
            commit()
        except DatabaseError as error:
            if transaction_conflict(error):
                sent[0] = before  # refused at the COMMIT (a deferred check): nothing written
            raise

    def statement(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not connection.in_atomic_block and not sql.lstrip().upper().startswith(READS):
            sent[0] = True
        return execute(sql, params, many, context)

    connection.commit = watched_commit  # type: ignore[method-assign]
    try:
        with connection.execute_wrapper(statement):
            yield sent
    finally:
        if had is None:
            del connection.commit  # the class's own again
        else:
            connection.commit = had  # type: ignore[method-assign]


def run_retried(
    work: Callable[[], T],
    *,
    before_retry: Callable[[], object] = lambda: None,
    attempts: int = 2,
) -> T:
    """`work()`; if the connection drops before anything was committed, or PostgreSQL rolls the
    work back for a deadlock or a serialization failure, `before_retry()` (reload what the first
    run may have changed in memory) and `work()` once more (`attempts` in all). Raises
    Unavailable when the last fails too, or when the drop came after a COMMIT was sent."""
    connection = connections[DEFAULT_DB_ALIAS]
    for attempt in range(1, attempts + 1):
        try:
            with commits_watched(connection) as sent:
                if attempt > 1:
                    before_retry()
                return work()
        except DatabaseError as error:
            conflict = transaction_conflict(error)
            if not conflict and not connection_lost(error):
                raise
            nested = connection.in_atomic_block  # a caller's transaction: not ours to run again
            if not conflict:
                connection.close()  # the next query opens a fresh one
            if sent[0] or nested or attempt == attempts or waited_out(error):
                raise Unavailable(str(error).strip()[:200], unsure=sent[0]) from error
    raise AssertionError("unreachable")  # the last attempt returns or raises
