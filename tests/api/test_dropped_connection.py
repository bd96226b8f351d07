"""A database connection dropped under a write (issue 42, item 4): before the COMMIT, the
operation runs once more on a fresh connection and the change is made exactly once; dropped
again, or at the COMMIT itself (its outcome unknown), the API answers 503 `unavailable` with
Retry-After and the dashboard a page saying to try again, never a 500. The backend is
terminated with pg_terminate_backend from another connection inside the service's transaction,
directly on PostgreSQL and through PgBouncer."""

import os
import re
from contextlib import contextmanager
from unittest import mock

import pytest
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.signals import post_save

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from tests.conftest import auth
from tests.factories import make_key
from tests.webhooks.test_terminated_backends import terminate

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BODY = {"name": "bot", "scopes": ["products:read"]}


def own_backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")  # inside a transaction: the server it holds
        return cursor.fetchone()[0]


@contextmanager
def terminated_when_saved(name: str, times: int):
    """The backend of the transaction that saves the key `name` is terminated right after its
    INSERT, the first `times` times; yields the list of backends terminated."""
    ended: list[int] = []

    def hook(sender, instance, created, **kwargs):
        if instance.name == name and created and len(ended) < times:
            ended.append(own_backend())
            terminate(ended[-1])

    post_save.connect(hook, sender=ApiKey, weak=False)
    try:
        yield ended
    finally:
        post_save.disconnect(hook, sender=ApiKey)


def created_rows(name: str) -> tuple[int, int]:
    keys = ApiKey.objects.filter(name=name)
    events = AuditEvent.objects.filter(action="key.created", subject__contains=name)
    return keys.count(), events.count()


def post_key(client, secret: str):
    return client.post("/api/v1/keys", BODY, content_type="application/json", **auth(secret))


def test_a_write_whose_connection_drops_once_is_made_once_on_a_fresh_connection(client):
    secret = make_key(scopes=EVERY_SCOPE).secret
    with terminated_when_saved("bot", times=1) as ended:
        answer = post_key(client, secret)
    assert len(ended) == 1
    assert answer.status_code == 201, answer.content
    assert created_rows("bot") == (1, 1)  # one key, one key.created row


def test_a_write_whose_connection_drops_twice_is_503_with_retry_after_and_nothing_written(
    client,
):
    secret = make_key(scopes=EVERY_SCOPE).secret
    with terminated_when_saved("bot", times=2) as ended:
        answer = post_key(client, secret)
    assert len(ended) == 2
    assert answer.status_code == 503, answer.content
    assert answer.json()["error"] == "unavailable"
    assert "try again" in answer.json()["message"]
    assert int(answer["Retry-After"]) >= 1
    assert created_rows("bot") == (0, 0)
    assert post_key(client, secret).status_code == 201  # the database is back: it works


def test_a_connection_dropped_at_the_commit_is_503_without_a_retry(client):
    secret = make_key(scopes=EVERY_SCOPE).secret
    commit = BaseDatabaseWrapper._commit
    ended: list[int] = []

    def commit_cut(self):
        if not ended:  # the request's first COMMIT: the service's transaction's
            ended.append(own_backend())
            terminate(ended[-1])
        return commit(self)

    with mock.patch.object(BaseDatabaseWrapper, "_commit", commit_cut):
        answer = post_key(client, secret)
    assert len(ended) == 1  # not run again: the first COMMIT's outcome was unknown
    assert answer.status_code == 503, answer.content
    assert answer.json()["error"] == "unavailable"
    assert "may or may not have been made" in answer.json()["message"]
    assert answer["Retry-After"]


def test_the_dashboard_answers_a_page_saying_to_try_again_not_a_500(client):
    created = make_key()
    client.force_login(created.key.user)
    page = client.get("/integrations/api/new/").content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    form = {"name": "bot", "expiry": "365", "scopes": ["products:read"], "form_token": token}
    with terminated_when_saved("bot", times=1):
        answer = client.post("/integrations/api/new/", form)
    assert answer.status_code == 200  # retried on a fresh connection: the secret is shown
    assert created_rows("bot") == (1, 1)
    form["name"] = "bot2"
    form["form_token"] = re.search(
        r'name="form_token" value="([^"]+)"', client.get("/integrations/api/new/").content.decode()
    ).group(1)
    with terminated_when_saved("bot2", times=2):
        answer = client.post("/integrations/api/new/", form)
    assert answer.status_code == 503
    assert "try again" in answer.content.decode().lower()
    assert answer["Retry-After"]
    assert created_rows("bot2") == (0, 0)


def test_a_connection_dropped_while_the_key_is_authorized_is_503_not_500(client):
    """Before the operation runs: the holder's role read for PATCH /workspace (owners only)."""
    secret = make_key(scopes=EVERY_SCOPE).secret
    ended: list[int] = []

    def cut(execute, sql, params, many, context):
        if "workspaces_membership" in sql and not ended:
            ended.append(own_backend())
            terminate(ended[-1])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(cut):
        answer = client.patch(
            "/api/v1/workspace",
            {"workspaceName": "Renamed"},
            content_type="application/json",
            **auth(secret),
        )
    assert len(ended) == 1
    if os.environ.get("GATEHOUSE_PGBOUNCER"):
        # Outside a transaction PgBouncer hands the next statement another server: no drop.
        assert answer.status_code == 200, answer.content
        return
    assert answer.status_code == 503, answer.content
    assert answer.json()["error"] == "unavailable" and answer["Retry-After"]


def test_a_connection_dropped_as_the_session_is_read_is_the_try_again_page(client):
    """Before the view and its retry: the session read by the middleware in front of it."""
    created = make_key()
    client.force_login(created.key.user)
    client.raise_request_exception = False  # as a browser sees it
    ended: list[int] = []

    def cut(execute, sql, params, many, context):
        if sql.startswith("SELECT") and "django_session" in sql and not ended:
            ended.append(own_backend())
            terminate(ended[-1])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(cut):
        answer = client.get("/integrations/api/")
    assert len(ended) == 1
    if os.environ.get("GATEHOUSE_PGBOUNCER"):
        # Outside a transaction PgBouncer hands the next statement another server: no drop.
        assert answer.status_code == 200
        return
    assert answer.status_code == 503
    assert "try again" in answer.content.decode().lower()
    assert answer["Retry-After"]


def test_a_connection_dropped_in_the_mcp_door_s_key_lookup_is_503_not_500(client):
    """MCP's steps before its tool are the API's (apps/api/door_steps.refusal_of): the key's
    lookup dropped, and dropped again on the fresh connection it retries on, is 503
    `unavailable` with Retry-After there too."""
    secret = make_key(scopes=EVERY_SCOPE).secret
    ended: list[int] = []

    def cut(execute, sql, params, many, context):
        if "secret_hash" in sql and len(ended) < 2:
            ended.append(own_backend())
            terminate(ended[-1])
        return execute(sql, params, many, context)

    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    message["params"] = {"name": "get_workspace", "arguments": {}}
    with connection.execute_wrapper(cut):
        answer = client.post(
            "/mcp",
            message,
            content_type="application/json",
            HTTP_ACCEPT="application/json, text/event-stream",
            **auth(secret),
        )
    assert len(ended) == 2
    if os.environ.get("GATEHOUSE_PGBOUNCER"):
        # Outside a transaction PgBouncer hands the next statement another server: no drop.
        assert answer.status_code == 200, answer.content
        return
    assert answer.status_code == 503, answer.content
    assert answer.json()["error"] == "unavailable" and answer["Retry-After"]
