"""A key used from many networks at once writes a handful of audit events and webhooks, not one
per network: five one by one in an hour, then one summary naming the rest, then none for the
key until the hour has passed (docs/security.md). Every network is still recorded."""

from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from apps.audit.models import AuditEvent
from apps.metering.buffer import usage_flush
from apps.usage.models import KeyNetwork
from tests.factories import make_key

pytestmark = pytest.mark.django_db

NEW, MANY = "key.new_network", "key.new_networks"


def _from(secret: str, address: str) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", REMOTE_ADDR=address)
    assert client.get("/api/v1/workspace").status_code == 200


def _events(key, action):
    return list(AuditEvent.objects.filter(key=key.key, action=action).order_by("id"))


def test_four_hundred_networks_one_request_each_make_six_events():
    created = make_key(scopes=["pages:read"])
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for n in range(400):
            _from(created.secret, f"2001:db8:{n // 256:x}:{n % 256:x}::1")
    assert KeyNetwork.objects.filter(key=created.key).count() == 400
    assert len(_events(created, NEW)) == 5
    (summary,) = _events(created, MANY)
    assert summary.data["network"] == "2001:db8:0:6::/64"  # the first past the five
    assert summary.data["networkCount"] == 1 and summary.data["networks"] == ["2001:db8:0:6::/64"]
    until = (start + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert summary.data["quietUntil"] == until


@override_settings(USAGE_FLUSH_SECONDS=3600)
def test_networks_flushed_together_past_the_five_are_one_summary_naming_twenty_and_counting_all():
    created = make_key(scopes=["pages:read"])
    _from(created.secret, "192.0.2.1")  # its first use
    usage_flush()
    for n in range(60):
        _from(created.secret, f"198.51.{n}.7")
    usage_flush()
    networks = sorted(f"198.51.{n}.0/24" for n in range(60))  # in the order they are written
    assert [e.data["network"] for e in _events(created, NEW)] == networks[:5]
    (summary,) = _events(created, MANY)
    assert summary.data["networkCount"] == 55 and summary.data["networks"] == networks[5:25]
    address = networks[5].replace(".0/24", ".7")
    assert summary.data["address"] == address and summary.ip == address


def test_the_window_is_per_key_and_ends_an_hour_after_the_summary():
    noisy, quiet = make_key(scopes=["pages:read"]), make_key(scopes=["pages:read"])
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        for n in range(8):
            _from(noisy.secret, f"203.0.{n}.1")
        _from(quiet.secret, "192.0.2.1")
        _from(quiet.secret, "198.51.100.1")
    assert len(_events(quiet, NEW)) == 1  # another key's window is its own
    assert (len(_events(noisy, NEW)), len(_events(noisy, MANY))) == (5, 1)
    with time_machine.travel(start + timedelta(minutes=59), tick=False):
        _from(noisy.secret, "203.0.100.1")
    assert (len(_events(noisy, NEW)), len(_events(noisy, MANY))) == (5, 1)
    with time_machine.travel(start + timedelta(minutes=61), tick=False):
        _from(noisy.secret, "203.0.101.1")
    assert (len(_events(noisy, NEW)), len(_events(noisy, MANY))) == (6, 1)
    assert _events(noisy, NEW)[-1].data["network"] == "203.0.101.0/24"
    assert KeyNetwork.objects.filter(key=noisy.key).count() == 10


def test_a_webhook_receives_the_five_and_the_summary_as_key_new_network(owner):
    from apps.audit.services import Actor
    from apps.webhooks.services import endpoint_create
    from tests.conftest import run_tasks
    from tests.webhooks.receiver import receiver

    created = make_key(user=owner, scopes=["pages:read"])
    with receiver() as hooks:
        made = endpoint_create(
            owner.memberships.get().workspace,
            url=hooks.url,
            event_types=["key.new_network"],
            actor=Actor.of_user(owner),
        )
        for n in range(40):
            _from(created.secret, f"2001:db8:{n}::1")
        run_tasks()
        events = hooks.verified(made.secret)
    assert len(events) == 6 and {e["type"] for e in events} == {"key.new_network"}
    summary = events[-1]["data"]["details"]
    assert summary["network"] == "2001:db8:6::/64" and summary["networkCount"] == 1
    assert set(summary) == {"network", "address", "networkCount", "networks", "quietUntil"}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_flushes_of_several_servers_at_once_keep_one_window():
    import threading

    from django.db import connection

    from apps.usage.recording import write_networks

    created = make_key(scopes=["pages:read"])
    write_networks({(created.key.pk, "192.0.2.0/24"): (timezone.now(), "192.0.2.1")})
    barrier = threading.Barrier(8)

    def flush(server: int) -> None:
        try:
            at = timezone.now()
            seen = {
                (created.key.pk, f"10.{server}.{n}.0/24"): (at, f"10.{server}.{n}.1")
                for n in range(6)
            }
            barrier.wait()
            write_networks(seen)
        finally:
            connection.close()

    threads = [threading.Thread(target=flush, args=(server,)) for server in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert KeyNetwork.objects.filter(key=created.key).count() == 49
    assert (len(_events(created, NEW)), len(_events(created, MANY))) == (5, 1)


def test_the_audit_page_says_what_the_summary_covers(client, owner):
    created = make_key(user=owner, scopes=["pages:read"])
    for n in range(8):
        _from(created.secret, f"203.0.{n}.1")
    page = client.get("/audit/").content.decode()
    assert "Key used from many new networks" in page
    assert "1 more new network from 203.0.6.0/24; no more listed one by one for an hour" in page
    assert "network 203.0.1.0/24" in page
