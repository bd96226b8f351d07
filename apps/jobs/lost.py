"""Telling the database going away from a task's own mistake, for the batching worker
(apps/jobs/batching.py): the first is waited out and the batch written again, the second is
the task's result."""

from django.db import DatabaseError, InterfaceError, InternalError, OperationalError, connections
from django_tasks_db.models import DBTaskResult

# The SQLSTATEs of a connection that went away: class 08 (connection exception), and a backend
# terminated or shutting down (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect).
GONE_STATES = ("08", "57P01", "57P02", "57P03")


def connection_lost(error: BaseException) -> bool:
    """Whether `error` is the database going away (rather than a task's own mistake): the
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
    return not connections[DBTaskResult.objects.db].is_usable()
