"""Rolling a key: a new secret for the same identity; the old one works through the grace."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.rolling import api_key_roll
from apps.api_keys.services import api_key_revoke
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db
URL = "/api/v1/workspace"
ACTOR = Actor.of_operator("test")


def holder(created) -> Actor:
    """Only a key's own holder may roll it."""
    return Actor.of_user(created.key.user)


def status(client, secret):
    response = client.get(URL, **auth(secret))
    return response.status_code, response.json().get("error")


def test_the_old_secret_works_until_the_grace_ends_then_stops_like_an_expiry(client):
    created = make_key(name="Zapier", scopes=["pages:read"])
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        rolled = api_key_roll(key=created.key, grace=timedelta(hours=1), actor=holder(created))
        assert rolled.secret != created.secret and rolled.key.pk == created.key.pk
        assert status(client, rolled.secret) == (200, None)
        assert status(client, created.secret) == (200, None)
    with time_machine.travel(start + timedelta(minutes=59, seconds=59), tick=False):
        assert status(client, created.secret) == (200, None)
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        assert status(client, created.secret) == (401, "expired-key")
        assert status(client, rolled.secret) == (200, None)
    key = ApiKey.objects.get(pk=created.key.pk)
    assert (key.name, key.scopes, key.expires_at) == (
        "Zapier",
        ["pages:read"],
        created.key.expires_at,
    )


def test_no_grace_stops_the_old_secret_at_once(client):
    created = make_key()
    rolled = api_key_roll(key=created.key, grace=timedelta(0), actor=holder(created))
    assert status(client, created.secret) == (401, "invalid-key")
    assert status(client, rolled.secret) == (200, None)


def test_a_second_roll_ends_the_first_grace(client):
    first = make_key()
    second = api_key_roll(key=first.key, grace=timedelta(days=7), actor=holder(first))
    third = api_key_roll(key=second.key, grace=timedelta(hours=1), actor=holder(second))
    assert status(client, first.secret) == (401, "invalid-key")
    assert status(client, second.secret) == (200, None)
    assert status(client, third.secret) == (200, None)


def test_revoking_a_rolling_key_stops_both_secrets(client):
    created = make_key()
    rolled = api_key_roll(key=created.key, grace=timedelta(days=1), actor=holder(created))
    api_key_revoke(key=rolled.key, actor=ACTOR)
    assert status(client, created.secret) == (401, "revoked-key")
    assert status(client, rolled.secret) == (401, "revoked-key")


def test_only_active_keys_roll_and_only_offered_graces(client):
    created = make_key()
    with pytest.raises(InvalidInput):
        api_key_roll(key=created.key, grace=timedelta(minutes=5), actor=holder(created))
    api_key_revoke(key=created.key, actor=ACTOR)
    with pytest.raises(InvalidInput):
        api_key_roll(key=created.key, grace=timedelta(0), actor=holder(created))


def test_a_roll_is_audited_without_any_secret():
    created = make_key()
    rolled = api_key_roll(key=created.key, grace=timedelta(hours=24), actor=holder(created))
    event = AuditEvent.objects.get(action="key.rolled")
    assert event.key_id == created.key.pk
    assert event.data["previousHint"] == created.key.hint
    text = str(event.data) + event.subject
    assert created.secret not in text and rolled.secret not in text


@pytest.mark.django_db(transaction=True)
def test_requests_with_the_old_secret_during_a_concurrent_roll_are_all_served(live_server):
    import threading

    import requests

    created = make_key()
    url = f"{live_server.url}{URL}"
    statuses: list[int] = []
    started = threading.Barrier(5)

    def hammer() -> None:
        session = requests.Session()
        started.wait()
        for _ in range(25):
            answer = session.get(url, headers={"Authorization": f"Bearer {created.secret}"})
            statuses.append(answer.status_code)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    started.wait()
    rolled = api_key_roll(key=created.key, grace=timedelta(hours=1), actor=holder(created))
    for thread in threads:
        thread.join()
    assert statuses == [200] * 100
    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=1)):
        old = requests.get(url, headers={"Authorization": f"Bearer {created.secret}"})
        assert old.status_code == 401 and old.json()["error"] == "expired-key"
        new = requests.get(url, headers={"Authorization": f"Bearer {rolled.secret}"})
        assert new.status_code == 200


def test_the_key_page_says_whether_the_old_secret_still_makes_calls(client):
    from tests.factories import owner_of

    owner = owner_of()
    created = make_key(user=owner)
    rolled = api_key_roll(key=created.key, grace=timedelta(days=1), actor=holder(created))
    client.force_login(owner)
    page_url = f"/integrations/api/keys/{created.key.pk}/"

    def old_secret_line() -> str:
        page = client.get(page_url).content.decode()
        return page.split('data-testid="old-secret-use">', 1)[1].split("</dd>", 1)[0]

    assert status(client, rolled.secret) == (200, None)
    assert "not used since the roll" in old_secret_line()  # the new secret says nothing of it
    assert status(client, created.secret) == (200, None)
    assert "last used" in old_secret_line() and "still calls" in old_secret_line()
    assert ApiKey.objects.get(pk=created.key.pk).previous_secret_last_used_at is not None
    rolled_again = api_key_roll(key=rolled.key, grace=timedelta(days=1), actor=holder(created))
    assert rolled_again.key.previous_secret_last_used_at is None  # a new roll starts afresh


def test_the_old_secrets_stamp_is_written_at_most_once_a_minute(
    client, settings, django_assert_num_queries
):
    created = make_key()
    api_key_roll(key=created.key, grace=timedelta(days=1), actor=holder(created))
    assert status(client, created.secret) == (200, None)  # stamps written
    settings.USAGE_FLUSH_SECONDS = 3600  # as in production: only the flush writes
    with django_assert_num_queries(2):  # the lookup by current hash, then by previous: no write
        assert status(client, created.secret) == (200, None)
