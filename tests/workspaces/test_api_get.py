from datetime import timedelta

import pytest
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.metering.buffer import usage_flush
from apps.workspaces.models import Membership
from tests.conftest import auth
from tests.factories import MembershipFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/workspace"


def test_get_returns_the_workspace_record_of_the_key(client):
    workspace = WorkspaceFactory(name="Acme Academy", timezone="Europe/Berlin")
    user = owner_of(workspace, email="owner@acme.test")
    created = make_key(user=user, scopes=["products:write", "communities:read"])
    response = client.get(URL, **auth(created.secret))
    assert response.status_code == 200
    assert response.json() == {
        "workspaceId": str(workspace.pk),
        "workspaceName": "Acme Academy",
        "userEmail": "owner@acme.test",
        "scopes": ["communities:read", "products:write"],
        "timezone": "Europe/Berlin",
        "autoTranscribeUploads": False,
        "transcriptionLanguage": "en",
    }


@pytest.mark.parametrize("scope", ["products:read", "pages:write", "communities:read"])
def test_any_active_key_can_read_its_workspace(client, scope):
    created = make_key(scopes=[scope])
    assert client.get(URL, **auth(created.secret)).status_code == 200


def test_user_email_is_the_key_owners(client):
    workspace = WorkspaceFactory()
    owner_of(workspace, email="first@example.com")
    admin = MembershipFactory(workspace=workspace, role=Membership.Role.ADMIN).user
    created = make_key(user=admin, workspace=workspace)
    assert client.get(URL, **auth(created.secret)).json()["userEmail"] == admin.email


def test_a_key_sees_only_its_own_workspace(client):
    """A user in two workspaces: each key answers for the workspace it was made in."""
    first, second = WorkspaceFactory(name="First"), WorkspaceFactory(name="Second")
    user = owner_of(first)
    MembershipFactory(workspace=second, user=user, role=Membership.Role.ADMIN)
    key_first = make_key(user=user, workspace=first)
    key_second = make_key(user=user, workspace=second)
    assert client.get(URL, **auth(key_first.secret)).json()["workspaceName"] == "First"
    assert client.get(URL, **auth(key_second.secret)).json()["workspaceName"] == "Second"


def test_member_key_cannot_read_the_workspace(client):
    created = make_key(scopes=["communities:read"], kind=ApiKey.Kind.MEMBER)
    response = client.get(URL, **auth(created.secret))
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient-scope"


def test_authenticated_get_is_one_query_when_last_use_is_fresh(
    client, key, settings, django_assert_num_queries
):
    settings.USAGE_FLUSH_SECONDS = 3600  # as in production: counts and stamps wait for the flush
    ApiKey.objects.filter(pk=key.key.pk).update(last_used_at=timezone.now())
    with django_assert_num_queries(1):
        assert client.get(URL, **auth(key.secret)).status_code == 200


def test_a_due_last_use_is_written_by_the_flush_not_the_request(
    client, key, settings, django_assert_num_queries
):
    settings.USAGE_FLUSH_SECONDS = 3600
    due = timezone.now() - timedelta(minutes=2)
    ApiKey.objects.filter(pk=key.key.pk).update(last_used_at=due)
    with django_assert_num_queries(1):  # the lookup, and nothing else
        assert client.get(URL, **auth(key.secret), REMOTE_ADDR="203.0.113.4").status_code == 200
    assert ApiKey.objects.get(pk=key.key.pk).last_used_at == due
    usage_flush()
    stamped = ApiKey.objects.get(pk=key.key.pk)
    assert stamped.last_used_at > due and stamped.last_used_ip == "203.0.113.4"


def test_use_is_recorded_with_client_ip(client, key, settings):
    client.get(URL, **auth(key.secret), REMOTE_ADDR="203.0.113.9")
    key.key.refresh_from_db()
    assert key.key.last_used_ip == "203.0.113.9"
    assert key.key.last_used_at is not None


def test_forwarded_address_is_trusted_only_behind_a_configured_proxy(client, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    created = make_key()
    client.get(
        URL,
        **auth(created.secret),
        REMOTE_ADDR="10.0.0.1",
        HTTP_X_FORWARDED_FOR="1.1.1.1, 198.51.100.7",
    )
    created.key.refresh_from_db()
    assert created.key.last_used_ip == "198.51.100.7"


@pytest.mark.parametrize(
    ("forwarded", "recorded"),
    [
        ("not-an-ip", "10.0.0.1"),
        ("1.1.1.1, 999.1.1.1", "10.0.0.1"),
        ("1.1.1.1, <script>", "10.0.0.1"),
        ("198.51.100.7:51234", "198.51.100.7"),
        ("[2001:db8::7]:443", "2001:db8::7"),
        ("2001:0db8:0000::0007", "2001:db8::7"),
    ],
)
def test_a_forwarded_address_that_is_not_an_ip_falls_back_to_the_peer(
    client, settings, forwarded, recorded
):
    settings.TRUSTED_PROXY_COUNT = 1
    created = make_key()
    response = client.get(
        URL, **auth(created.secret), REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded
    )
    assert response.status_code == 200
    created.key.refresh_from_db()
    assert created.key.last_used_ip == recorded


def test_an_api_call_skips_djangos_select_1_health_check(client, key, monkeypatch):
    from django.db import connection

    checks = []
    monkeypatch.setattr(connection, "is_usable", lambda: checks.append(1) or True)
    before = connection.health_check_enabled, connection.health_check_done
    # As a request's start leaves a reused connection when CONN_HEALTH_CHECKS is on.
    connection.health_check_enabled, connection.health_check_done = True, False
    try:
        assert client.get(URL, **auth(key.secret)).status_code == 200
    finally:
        connection.health_check_enabled, connection.health_check_done = before
    assert checks == []  # the lookup was the request's first and only statement


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_connection_the_database_dropped_is_replaced_without_a_failed_call(client):
    import os

    import psycopg

    if os.environ.get("GATEHOUSE_PGBOUNCER"):
        # A pooled server connection is shared: its pid is nobody's own, and the connection
        # that would terminate it may be handed that very one.
        pytest.skip("through PgBouncer a backend belongs to the pool, not to this client")
    from django.conf import settings as django_settings
    from django.db import connection

    created = make_key()
    assert client.get(URL, **auth(created.secret)).status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    db = django_settings.DATABASES["default"]
    with psycopg.connect(
        host=db["HOST"] or None,
        port=db["PORT"] or None,
        user=db["USER"],
        dbname=db["NAME"],
        password=db["PASSWORD"] or None,
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    assert client.get(URL, **auth(created.secret)).status_code == 200


def test_one_flush_stamps_many_keys_at_once_and_only_the_due_ones(
    client, settings, django_assert_num_queries
):
    settings.USAGE_FLUSH_SECONDS = 3600
    now = timezone.now()
    due = [make_key(name=f"Due {n}").key for n in range(3)]
    fresh = make_key(name="Fresh").key
    ApiKey.objects.filter(pk__in=[k.pk for k in due]).update(
        last_used_at=now - timedelta(minutes=5), last_used_ip="192.0.2.1"
    )
    ApiKey.objects.filter(pk=fresh.pk).update(
        last_used_at=now - timedelta(seconds=20), last_used_ip="192.0.2.1"
    )
    from apps.metering.buffer import add

    def queue(gathered):
        for key in [*due, fresh]:
            gathered.last_use[key.pk] = (now, "198.51.100.9", False, False)

    add(queue)
    with django_assert_num_queries(1):  # one UPDATE for all of them, no key loaded
        usage_flush()
    stamped = {k.name: (k.last_used_at, k.last_used_ip) for k in ApiKey.objects.all()}
    assert all(stamped[f"Due {n}"] == (now, "198.51.100.9") for n in range(3))
    assert stamped["Fresh"][1] == "192.0.2.1"  # written 20 seconds ago: not due
