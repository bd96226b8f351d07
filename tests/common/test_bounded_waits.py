"""A database that stops answering on a connection already open (PgBouncer stopped, a server
hung) is waited for at most DATABASE_ANSWER_TIMEOUT_SECONDS: the request is answered 503
`unavailable` with Retry-After, the connection is dropped, and the next request, once the
database answers again, is served (issue 53, item 2). The kernel keeps accepting the bytes, so
only a bound in the app can see the silence: a relay between Django and PostgreSQL that stops
passing them on shows it, as PgBouncer under SIGSTOP does in the fault run's row 13."""

import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from django.db import OperationalError, close_old_connections, connection

from apps.common.postgresql.base import unbounded_waits
from apps.common.retry import waited_out
from tests.conftest import auth
from tests.factories import make_key

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BOUND = 1.5


class SilentRelay:
    """A TCP relay to PostgreSQL that can stop passing bytes on (`silent`) while its sockets
    stay open, as a stopped process's do."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.silent = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pass, args=(client, server), daemon=True).start()

    def _pass(self, client: socket.socket, server: socket.socket) -> None:
        ends = {client: server, server: client}
        try:
            while not self.closed:
                if self.silent.is_set():
                    time.sleep(0.02)  # the bytes wait in the kernel, unread
                    continue
                readable, _, _ = select.select(list(ends), [], [], 0.05)
                for end in readable:
                    data = end.recv(65536)
                    if not data:
                        return
                    ends[end].sendall(data)
        except OSError:
            return
        finally:
            client.close()
            server.close()

    def silence(self, seconds: float) -> None:
        """Stop passing bytes on for `seconds`: long enough to fail a bound, and short enough
        that a wait without one ends (and its test fails) rather than hanging."""
        self.silent.set()
        threading.Timer(seconds, self.silent.clear).start()

    def close(self) -> None:
        self.closed = True
        self.listener.close()


@pytest.fixture
def relayed() -> Iterator[SilentRelay]:
    """The default connection reaches PostgreSQL through a `SilentRelay`, its answers bounded to
    BOUND seconds."""
    settings = connection.settings_dict
    saved = (settings["HOST"], settings["PORT"], settings["OPTIONS"].get("answer_timeout"))
    relay = SilentRelay(settings["HOST"] or "127.0.0.1", int(settings["PORT"] or 5432))
    connection.close()
    settings["HOST"], settings["PORT"] = "127.0.0.1", str(relay.port)
    settings["OPTIONS"]["answer_timeout"] = BOUND
    try:
        yield relay
    finally:
        relay.silent.clear()
        connection.close()
        settings["HOST"], settings["PORT"], settings["OPTIONS"]["answer_timeout"] = saved
        relay.close()


def test_a_silent_database_is_answered_503_within_the_bound_then_served_again(client, relayed):
    secret = make_key(scopes=["pages:read"]).secret
    assert client.get("/api/v1/workspace", **auth(secret)).status_code == 200  # open, in use

    relayed.silence(4 * BOUND)
    started = time.monotonic()
    answer = client.get("/api/v1/workspace", **auth(secret))
    waited = time.monotonic() - started
    assert answer.status_code == 503 and answer.json()["error"] == "unavailable"
    assert answer["Retry-After"]
    # One wait, not one per attempt: the lookup does not ask again after a wait ran out.
    assert BOUND <= waited < 2 * BOUND, waited

    time.sleep(4 * BOUND - waited + 0.2)
    assert client.get("/api/v1/workspace", **auth(secret)).status_code == 200


def test_a_dashboard_page_on_a_silent_database_is_the_try_again_page_within_the_bound(
    client, owner, relayed
):
    assert client.get("/integrations/api/").status_code == 200  # a connection open, in use

    relayed.silence(4 * BOUND)
    client.raise_request_exception = False  # the session's load fails: the server's handler
    close_old_connections()  # as a server does at a request's start (the test client does not)
    started = time.monotonic()
    page = client.get("/integrations/api/")
    waited = time.monotonic() - started
    assert page.status_code == 503 and page["Retry-After"]
    assert "try again" in page.content.decode().lower()
    # Django's check of the reused connection waited out: not a new connection, nor the view
    # run again, to wait once more.
    assert BOUND <= waited < 2 * BOUND, waited


def test_the_connection_that_waited_out_is_not_used_again(relayed):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    stuck = connection.connection
    relayed.silence(4 * BOUND)
    with pytest.raises(OperationalError) as raised:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    assert waited_out(raised.value)
    assert stuck.closed
    relayed.silent.clear()
    connection.close_if_unusable_or_obsolete()  # as Django does at a request's end
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")
        assert cursor.fetchone() == (2,)
    assert connection.connection is not stuck


def test_a_slow_answer_within_the_bound_is_waited_for_and_migrate_waits_for_any():
    settings = connection.settings_dict["OPTIONS"]
    saved = settings.get("answer_timeout")
    settings["answer_timeout"] = 0.5
    connection.close()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(0.1)")  # well within
            with pytest.raises(OperationalError) as raised:
                cursor.execute("SELECT pg_sleep(1)")
        assert waited_out(raised.value)
        connection.close()
        with unbounded_waits(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(1), 'done'")
            assert cursor.fetchone()[1] == "done"
    finally:
        settings["answer_timeout"] = saved
        connection.close()
