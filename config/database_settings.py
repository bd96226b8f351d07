"""Django's default database, from DATABASE_URL (SQLite in var/ when it is unset)."""

from pathlib import Path
from typing import Any

import dj_database_url

from .env import env_bool, env_int


def database_settings(url: str, base_dir: Path) -> dict[str, Any]:
    """The DATABASES["default"] of `url`, or of the development SQLite file without one."""
    database: dict[str, Any] = dict(
        dj_database_url.parse(
            url or f"sqlite:///{base_dir / 'db.sqlite3'}",
            conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
            # A reused connection is checked (one SELECT 1) before a request's first query, so
            # a database restart costs no failed request; false saves that round trip.
            conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
        )
    )
    # Behind PgBouncer in transaction pooling a cursor WITH HOLD (Django's `.iterator()` on
    # PostgreSQL) stays on the server it was declared on while the next FETCH may go to another
    # ("cursor does not exist"): set DATABASE_SERVER_SIDE_CURSORS=false there, and iterators
    # read their rows in one client-side result.
    database["DISABLE_SERVER_SIDE_CURSORS"] = not env_bool("DATABASE_SERVER_SIDE_CURSORS", True)
    if database["ENGINE"] == "django.db.backends.postgresql":
        # A database (or PgBouncer) that does not answer the connection is given up after this
        # long, and the request answered 503 `unavailable` rather than hanging (issue 53).
        options = database.setdefault("OPTIONS", {})
        options["connect_timeout"] = env_int("DATABASE_CONNECT_TIMEOUT_SECONDS", 5)
        # And one that stops answering on a connection already open, after this long; 0 waits
        # as long as it takes (apps/common/postgresql).
        database["ENGINE"] = "apps.common.postgresql"
        options["answer_timeout"] = env_int("DATABASE_ANSWER_TIMEOUT_SECONDS", 10) or None
    if database["ENGINE"] == "django.db.backends.sqlite3":
        # The embedded default serves concurrent readers and writers without "database is
        # locked": WAL lets readers run beside the one writer, IMMEDIATE transactions take the
        # write lock at BEGIN (so no reader has to upgrade to a writer mid-transaction and fail
        # at once), and the busy timeout makes a writer wait for the lock instead of failing.
        database["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": env_int("SQLITE_BUSY_TIMEOUT_SECONDS", 20),
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
        # Tests use a file too (not Django's shared in-memory database, which has table locks
        # of its own), so the concurrency tests exercise the same SQLite set-up as a server.
        (base_dir / "var").mkdir(exist_ok=True)
        database["TEST"] = {"NAME": str(base_dir / "var" / "test-db.sqlite3")}
    return database
