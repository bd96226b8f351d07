"""The prepared key lookup gives exactly what the ORM's select_related query gives."""

from datetime import timedelta

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from apps.api_keys import tokens
from apps.api_keys.lookup import api_key_with_holder
from apps.api_keys.models import ApiKey
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def test_the_lookup_builds_the_same_key_workspace_and_user_as_the_orm(django_assert_num_queries):
    created = make_key(scopes=["pages:read", "products:write"], expires_in=timedelta(days=3))
    ApiKey.objects.filter(pk=created.key.pk).update(
        last_used_at=timezone.now(), last_used_ip="2001:db8::7"
    )
    expected = ApiKey.objects.select_related("workspace", "user").get(pk=created.key.pk)
    with django_assert_num_queries(1):
        found = api_key_with_holder(tokens.hash_secret(created.secret))
    assert model_to_dict(found) == model_to_dict(expected)
    assert found.expires_at == expected.expires_at and found.expires_at.tzinfo is not None
    assert found.last_used_at == expected.last_used_at
    # The same time zone object too, though the lookup reads its timestamps with psycopg's own
    # compiled loader where the ORM uses Django's.
    assert found.expires_at.tzinfo is expected.expires_at.tzinfo
    assert found.user.date_joined.tzinfo is expected.user.date_joined.tzinfo
    assert found.scopes == ["pages:read", "products:write"]
    assert model_to_dict(found.workspace) == model_to_dict(expected.workspace)
    assert found.user.email == expected.user.email and found.user.pk == expected.user.pk
    assert not found._state.adding and found._state.db == "default"
    for instance, orm in ((found, expected), (found.workspace, expected.workspace)):
        for field in type(instance)._meta.concrete_fields:
            assert getattr(instance, field.attname) == getattr(orm, field.attname), field.name
    found.name = "Renamed through the built instance"
    found.save(update_fields=["name"])  # an instance the ORM can save, as from_db's would be
    assert ApiKey.objects.get(pk=created.key.pk).name == "Renamed through the built instance"


def test_an_unknown_hash_is_none():
    make_key()
    assert api_key_with_holder(tokens.hash_secret("gwk_" + "a" * 38)) is None


@pytest.mark.postgres
def test_on_postgresql_the_lookup_is_planned_once_per_connection(settings):
    from django.db import connection

    if not settings.DATABASE_PREPARED_LOOKUP:
        pytest.skip("the prepared lookup is off (behind a transaction-pooling PgBouncer < 1.21)")
    created = make_key()
    for _ in range(3):
        assert api_key_with_holder(tokens.hash_secret(created.secret)).pk == created.key.pk
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert len([s for s in prepared if "secret_hash" in s and "JOIN" in s]) == 1, prepared
    settings.DATABASE_PREPARED_LOOKUP = False  # behind an old transaction-pooling PgBouncer
    assert api_key_with_holder(tokens.hash_secret(created.secret)).pk == created.key.pk


@pytest.mark.postgres
def test_on_a_session_not_on_utc_the_lookup_still_gives_djangos_time_zone(settings):
    """psycopg's compiled timestamp loader gives the session's zone; the lookup uses it only
    where that is UTC. Elsewhere it reads timestamps as the ORM does (Django's loader, which
    takes the session to be on UTC: the same instant and tzinfo as the ORM's, right or not)."""
    from datetime import UTC

    from django.db import connections

    if not settings.DATABASE_PREPARED_LOOKUP:
        pytest.skip("the prepared lookup is off (behind a transaction-pooling PgBouncer < 1.21)")
    connection = connections["default"]
    created = make_key(expires_in=timedelta(days=3))
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Europe/Paris'")
    connection.__dict__.pop("gatehouse_lookup_cursor", None)  # the next lookup makes its own
    found = api_key_with_holder(tokens.hash_secret(created.secret))
    expected = ApiKey.objects.select_related("user").get(pk=created.key.pk)
    assert found.expires_at == expected.expires_at and found.expires_at.tzinfo is UTC
    assert found.user.date_joined == expected.user.date_joined
    assert found.user.date_joined.tzinfo is UTC
