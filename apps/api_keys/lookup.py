"""The key lookup of every API request as one prepared SQL statement.

Building `ApiKey.objects.select_related("workspace", "user").get(secret_hash=...)` costs the ORM
more CPU than the database spends answering it (it compiles 40-odd columns and three joins on
every call). The statement is the same every time, so it is compiled once per database
connection alias, here, and each request only executes it and turns the row into the three
model instances with the same converters the ORM would apply.
"""

import functools
import time
from dataclasses import dataclass
from datetime import UTC
from typing import Any, cast

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model, signals
from django.db.models.base import ModelState

from apps.accounts.models import User
from apps.common.retry import waited_out
from apps.workspaces.models import Workspace

from .models import ApiKey


@dataclass(frozen=True)
class _Part:
    model: type[Model]
    attnames: list[str]
    # (column's index in the part, its Col expression, its converters), as the ORM's compiler
    # would apply them, for the columns that have any
    converted: list[tuple[int, Any, list[Any]]]
    start: int
    end: int

    def build(self, row: tuple[Any, ...], alias: str, connection: BaseDatabaseWrapper) -> Model:
        values = list(row[self.start : self.end])
        for index, column, converters in self.converted:
            for converter in converters:
                values[index] = converter(values[index], column, connection)
        model = self.model
        if signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model):
            return model.from_db(alias, self.attnames, values)
        # What Model.from_db leaves, without __init__'s per-field work and its two signals that
        # nothing listens to for this model: the same instance, for a tenth of the CPU.
        instance = model.__new__(model)
        instance.__dict__.update(zip(self.attnames, values, strict=True))
        instance._state = ModelState()
        instance._state.adding = False
        instance._state.db = alias
        return instance


@dataclass(frozen=True)
class _Statement:
    sql: str  # by the current secret's hash
    sql_previous: str  # by the hash of the secret before the last roll
    key: _Part
    workspace: _Part
    user: _Part


_statements: dict[str, _Statement] = {}


def _prepare(alias: str) -> _Statement:
    connection = connections[alias]
    quote = connection.ops.quote_name
    parts, selects, position = [], [], 0
    relations: list[tuple[type[Model], str, str | None]] = [
        (ApiKey, "k", None),
        (Workspace, "w", "workspace_id"),
        (User, "u", "user_id"),
    ]
    for model, table_alias, _ in relations:
        fields = model._meta.concrete_fields
        columns = [field.get_col(table_alias) for field in fields]
        converters = [
            connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            for col in columns
        ]
        selects += [f"{table_alias}.{quote(str(field.column))}" for field in fields]
        parts.append(
            _Part(
                model=model,
                attnames=[field.attname for field in fields],
                converted=[
                    (index, columns[index], converters[index])
                    for index in range(len(fields))
                    if converters[index]
                ],
                start=position,
                end=position + len(fields),
            )
        )
        position += len(fields)
    joins = " ".join(
        f"INNER JOIN {quote(model._meta.db_table)} {table_alias} "
        f"ON {table_alias}.{quote(str(model._meta.pk.column))} = k.{quote(str(column))}"
        for model, table_alias, column in relations[1:]
    )
    # Only quoted names from the models' metadata go into the text; the hash is a parameter.
    table = quote(ApiKey._meta.db_table)
    select = f"SELECT {', '.join(selects)} FROM {table} k {joins} WHERE k."  # noqa: S608
    return _Statement(
        sql=select + quote(str(ApiKey._meta.get_field("secret_hash").column)) + " = %s",
        sql_previous=select
        + quote(str(ApiKey._meta.get_field("previous_secret_hash").column))
        + " = %s",
        key=parts[0],
        workspace=parts[1],
        user=parts[2],
    )


# psycopg prepares a statement only when asked (prepare=True) once the connection's threshold is
# not None; this one keeps Django's own queries, sent by its client-binding cursor, unprepared.
ONLY_WHEN_ASKED = 2**31 - 1


def _fetch(connection: BaseDatabaseWrapper, sql: str, secret_hash: str) -> tuple[Any, ...] | None:
    if connection.vendor == "postgresql" and settings.DATABASE_PREPARED_LOOKUP:
        return _fetch_prepared(connection, sql, secret_hash)
    with connection.cursor() as cursor:
        cursor.execute(sql, [secret_hash])
        row: tuple[Any, ...] | None = cursor.fetchone()
        return row


def _fetch_prepared(
    connection: BaseDatabaseWrapper, sql: str, secret_hash: str
) -> tuple[Any, ...] | None:
    """The lookup as a prepared statement on PostgreSQL: planned once per connection instead of
    on every request (Django sends its queries unprepared, for connection poolers' sake; the
    join of three tables cost more to plan than to run). Logged like a Django query, so the
    query counts of tests and debug tools still see it."""
    start = time.monotonic()
    # Errors as Django's own (OperationalError and the rest), as its cursor would raise them.
    with connection.wrap_database_errors:
        if connection.connection is None:
            connection.ensure_connection()
        raw = connection.connection
        if raw.prepare_threshold is None:
            raw.prepare_threshold = ONLY_WHEN_ASKED
        cursor = _lookup_cursor(connection, raw)

        def run(sql: str, params: Any, many: bool, context: Any) -> None:
            # Server-side binding, so that the statement can be prepared.
            cursor.execute(sql, params, prepare=True)

        if connection.execute_wrappers:  # traces, a commit watch: they see this query too
            executor: Any = run
            for wrapper in reversed(connection.execute_wrappers):
                executor = functools.partial(wrapper, executor)
            executor(sql, (secret_hash,), False, {"connection": connection, "cursor": cursor})
        else:
            run(sql, (secret_hash,), False, None)
        row: tuple[Any, ...] | None = cursor.fetchone()
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - start:.3f}"})
    return row


def _lookup_cursor(connection: BaseDatabaseWrapper, raw: Any) -> Any:
    """The lookup's own cursor on this database connection, made once and kept with it.

    A new cursor makes new loaders for all 60-odd columns on every request; this one keeps
    them. Its timestamps are read by psycopg's compiled loader rather than Django's (a Python
    subclass of psycopg's Python one, which only sets `connection.timezone` on each value):
    where the session's time zone is UTC and Django's is `timezone.utc`, both give the same
    datetime, to its tzinfo (psycopg reads "UTC" as `timezone.utc`).
    """
    kept = connection.__dict__.get("gatehouse_lookup_cursor")
    if kept is not None and kept.connection is raw and not kept.closed:
        return kept
    import psycopg  # here: a process on SQLite never needs it
    from psycopg.types.datetime import TimestamptzLoader

    cursor = psycopg.Cursor(raw)
    if connection.timezone is UTC and raw.pgconn.parameter_status(b"TimeZone") == b"UTC":
        cursor.adapters.register_loader("timestamptz", TimestamptzLoader)
    connection.__dict__["gatehouse_lookup_cursor"] = cursor
    return cursor


def api_key_with_holder(
    secret_hash: str, *, alias: str = "default", previous: bool = False
) -> ApiKey | None:
    """The key stored under `secret_hash`, its workspace and user attached, in one query.

    With `previous`, the key whose secret before its last roll had that hash.
    """
    statement = _statements.get(alias)
    if statement is None:
        statement = _statements[alias] = _prepare(alias)
    connection = connections[alias]
    sql = statement.sql_previous if previous else statement.sql
    try:
        row = _fetch(connection, sql, secret_hash)
    except (OperationalError, InterfaceError) as error:
        # The API skips Django's per-request health check (a `SELECT 1` round trip on every
        # request: apps/api/middleware.py), so a connection the server dropped is found here:
        # outside a transaction, reconnect and ask once more; a wait for the database that ran
        # out is not asked again (it would wait as long again).
        if connection.in_atomic_block or waited_out(error):
            raise
        connection.close()
        row = _fetch(connection, sql, secret_hash)
    if row is None:
        return None
    key = cast(ApiKey, statement.key.build(row, alias, connection))
    # As select_related fills them: into the key's cache of related objects, past the
    # descriptors' checks (type, router) that hold for rows of this very join.
    cache = key._state.fields_cache
    cache["workspace"] = statement.workspace.build(row, alias, connection)
    cache["user"] = statement.user.build(row, alias, connection)
    return key
