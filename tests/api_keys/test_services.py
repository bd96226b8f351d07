from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys import tokens
from apps.api_keys.models import ApiKey, ApiKeyState
from apps.api_keys.services import api_key_create, api_key_revoke
from apps.api_keys.verification import (
    KeyRejected,
    api_key_authenticate,
    api_key_record_use,
)
from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.leaks.secrets import api_key_find_by_secret
from tests.factories import make_key, owner_of

OPERATOR = Actor.of_operator("test")

pytestmark = pytest.mark.django_db


def create(user, **overrides):
    arguments = dict(
        workspace=user.memberships.first().workspace,
        user=user,
        name="CI deploys",
        scopes=["products:read"],
        expires_at=timezone.now() + timedelta(days=30),
    )
    arguments.update(overrides)
    return api_key_create(**arguments)


def test_only_the_keyed_hash_and_hint_are_stored():
    created = create(owner_of())
    stored = ApiKey.objects.get(pk=created.key.pk)
    assert stored.secret_hash == tokens.hash_secret(created.secret)
    assert stored.hint == tokens.hint_for(created.secret)
    values = [str(v) for v in ApiKey.objects.filter(pk=stored.pk).values().get().values()]
    assert not any(created.secret in value for value in values)


def test_name_is_trimmed_and_required():
    user = owner_of()
    assert create(user, name="  Zapier  ").key.name == "Zapier"
    with pytest.raises(InvalidInput, match="name must not be empty"):
        create(user, name="   ")
    with pytest.raises(InvalidInput, match="at most 100"):
        create(user, name="x" * 101)


@pytest.mark.parametrize("scopes", [[], ["products:delete"], "products:read", [1]])
def test_scopes_must_be_a_non_empty_list_of_known_scopes(scopes):
    with pytest.raises(InvalidInput):
        create(owner_of(), scopes=scopes)


def test_scopes_are_stored_sorted_without_duplicates():
    key = create(owner_of(), scopes=["pages:write", "products:read", "pages:write"]).key
    assert key.scopes == ["pages:write", "products:read"]


def test_member_keys_hold_community_scopes_only():
    with pytest.raises(InvalidInput, match="products:read"):
        create(owner_of(), scopes=["products:read"], kind=ApiKey.Kind.MEMBER)
    created = create(owner_of(), scopes=["communities:read"], kind=ApiKey.Kind.MEMBER)
    assert created.secret.startswith("gmk_")


def test_expiry_must_be_in_the_future_and_within_365_days():
    user = owner_of()
    with pytest.raises(InvalidInput, match="future"):
        create(user, expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(InvalidInput, match="365"):
        create(user, expires_at=timezone.now() + timedelta(days=367))
    assert create(user, expires_at=timezone.now() + timedelta(days=365)).key.expires_at
    assert create(user, expires_at=None).key.expires_at is None


@time_machine.travel("2026-11-22 10:00:00Z", tick=False)
def test_cli_keys_live_exactly_90_days():
    key = create(owner_of(), expires_at=None, tag=ApiKey.Tag.CLI).key
    assert key.expires_at == timezone.now() + timedelta(days=90)
    assert key.is_cli
    with pytest.raises(InvalidInput, match="90 days"):
        create(owner_of(), expires_at=timezone.now() + timedelta(days=5), tag=ApiKey.Tag.CLI)


def test_authenticate_returns_the_key_with_workspace_and_user():
    created = make_key()
    key = api_key_authenticate(created.secret)
    assert key.pk == created.key.pk
    assert key.workspace.name and key.user.email


@pytest.mark.parametrize("raw", ["nonsense", "gwk_" + "a" * 38])
def test_malformed_secrets_are_invalid(raw):
    with pytest.raises(KeyRejected) as rejected:
        api_key_authenticate(raw)
    assert rejected.value.reason == "invalid-key"


def test_unknown_well_formed_secret_is_invalid():
    with pytest.raises(KeyRejected, match="invalid-key"):
        api_key_authenticate(tokens.generate_secret("workspace"))


def test_revoked_key_is_rejected_and_keeps_its_history():
    created = make_key()
    actor = created.key.user
    api_key_revoke(key=created.key, actor=Actor.of_user(actor))
    with pytest.raises(KeyRejected, match="revoked-key"):
        api_key_authenticate(created.secret)
    key = ApiKey.objects.get(pk=created.key.pk)
    assert key.state == ApiKeyState.REVOKED
    assert key.revoked_by == actor


def test_revoking_twice_keeps_the_first_revocation():
    created = make_key()
    first = api_key_revoke(key=created.key, actor=OPERATOR).revoked_at
    with time_machine.travel(timezone.now() + timedelta(hours=1)):
        assert api_key_revoke(key=created.key, actor=OPERATOR).revoked_at == first


def test_key_expires_at_the_exact_instant():
    created = make_key(expires_in=timedelta(days=7))
    expires_at = created.key.expires_at
    with time_machine.travel(expires_at - timedelta(microseconds=1), tick=False):
        assert api_key_authenticate(created.secret).pk == created.key.pk
    with time_machine.travel(expires_at, tick=False):
        with pytest.raises(KeyRejected, match="expired-key"):
            api_key_authenticate(created.secret)


def test_revocation_wins_over_expiry():
    created = make_key(expires_in=timedelta(days=1))
    api_key_revoke(key=created.key, actor=OPERATOR)
    with time_machine.travel(timezone.now() + timedelta(days=2)):
        with pytest.raises(KeyRejected, match="revoked-key"):
            api_key_authenticate(created.secret)


def test_states_filter_in_the_database():
    active = make_key().key
    expired = make_key(expires_in=timedelta(days=1)).key
    revoked = make_key().key
    api_key_revoke(key=revoked, actor=OPERATOR)
    later = timezone.now() + timedelta(days=2)
    assert list(ApiKey.objects.in_state("active", later)) == [active]
    assert list(ApiKey.objects.in_state("expired", later)) == [expired]
    assert list(ApiKey.objects.in_state("revoked", later)) == [revoked]


def test_last_use_is_written_at_most_once_a_minute():
    key = make_key().key
    start = timezone.now()
    assert api_key_record_use(key, ip="10.0.0.1", now=start) is True
    assert api_key_record_use(key, ip="10.0.0.2", now=start + timedelta(seconds=59)) is False
    # Another process with a stale copy of the key does not write either.
    stale = ApiKey.objects.get(pk=key.pk)
    stale.last_used_at = None
    assert api_key_record_use(stale, ip="10.0.0.3", now=start + timedelta(seconds=30)) is False
    assert api_key_record_use(key, ip="10.0.0.4", now=start + timedelta(seconds=60)) is True
    key.refresh_from_db()
    assert key.last_used_ip == "10.0.0.4"


def test_find_by_secret_ignores_state():
    created = make_key()
    api_key_revoke(key=created.key, actor=OPERATOR)
    assert api_key_find_by_secret(created.secret).pk == created.key.pk
    assert api_key_find_by_secret("not-a-secret") is None


def test_the_database_refuses_keys_the_services_never_make():
    from django.db import IntegrityError, transaction

    created = make_key()
    for change in (
        {"expires_at": created.key.created_at},
        {"expires_at": created.key.created_at - timedelta(days=1)},
        {"scopes": []},
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            ApiKey.objects.filter(pk=created.key.pk).update(**change)


def test_the_database_holds_one_live_cli_key_per_installation():
    from django.db import IntegrityError, transaction

    first = make_key(tag=ApiKey.Tag.CLI)
    ApiKey.objects.filter(pk=first.key.pk).update(installation_id="laptop")
    second = make_key(user=first.key.user, tag=ApiKey.Tag.CLI)
    with pytest.raises(IntegrityError), transaction.atomic():
        ApiKey.objects.filter(pk=second.key.pk).update(installation_id="laptop")
    ApiKey.objects.filter(pk=first.key.pk).update(revoked_at=first.key.created_at)
    ApiKey.objects.filter(pk=second.key.pk).update(installation_id="laptop")  # now allowed
