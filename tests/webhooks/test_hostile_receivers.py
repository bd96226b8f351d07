"""Receivers and URLs that try to hurt the workers: an answer trickled a byte at a time, an
answer of megabytes, URLs the client cannot use, addresses that lead inside, a secret sealed
under a rotated SECRET_KEY. Each ends as a failed attempt with its reason, never as a stuck
delivery or a worker held."""

import ipaddress
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client as PlainClient

from apps.audit.services import Actor
from apps.webhooks.destinations import address_allowed, clean_url
from apps.webhooks.events import webhook_emit
from apps.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from apps.webhooks.services import endpoint_create
from tests.conftest import run_tasks
from tests.factories import WorkspaceFactory, owner_of

from .receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def answering(write_body):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.end_headers()
            try:
                write_body(self.wfile)
            except OSError:
                pass  # the client hung up, as it should

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/in"
    finally:
        server.shutdown()
        server.server_close()


def ping(url: str) -> WebhookEndpoint:
    workspace = WorkspaceFactory()
    made = endpoint_create(
        workspace, url=url, event_types=["key.revoked"], actor=Actor.of_user(owner_of(workspace))
    )
    with transaction.atomic():
        webhook_emit(workspace, "webhook.ping", {}, endpoints=[made.endpoint])
    return made.endpoint


def test_an_answer_trickled_a_byte_at_a_time_is_cut_off_at_the_time_limit(settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 1

    def trickle(out) -> None:
        for _ in range(30):
            out.write(b"x")
            out.flush()
            time.sleep(0.2)

    with answering(trickle) as url:
        ping(url)
        started = time.monotonic()
        run_tasks()
        took = time.monotonic() - started
    attempt = WebhookAttempt.objects.get()
    assert not attempt.succeeded and attempt.error == "No complete answer within 1 seconds."
    assert took < 3 and attempt.duration_ms < 1500
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and delivery.locked_until is None  # retried later


def test_of_an_answer_of_megabytes_only_the_first_2_kb_are_read():
    def flood(out) -> None:
        chunk = b"y" * 65536
        for _ in range(80):  # 5 MB
            out.write(chunk)

    with answering(flood) as url:
        ping(url)
        run_tasks()
    attempt = WebhookAttempt.objects.get()
    assert attempt.succeeded and attempt.response_body == "y" * 2048


def test_an_answer_with_a_nul_byte_is_recorded_as_delivered():
    """PostgreSQL's text refuses NUL: the attempt's write failed and the delivery stayed
    pending, its task failed."""

    def nul(out) -> None:
        out.write(b"ok\x00nul \xff")

    with answering(nul) as url:
        ping(url)
        run_tasks()
    attempt = WebhookAttempt.objects.get()
    assert attempt.succeeded and attempt.response_body == "ok\ufffdnul \ufffd"
    assert WebhookDelivery.objects.get().status == "delivered"


@pytest.mark.parametrize(
    "url",
    ["https://example.com:abc/hook", "https://xn--zz.com/hook", "https://[::1", "https://[zz]/"],
)
def test_urls_the_client_cannot_use_are_refused_when_saved(url):
    with pytest.raises(Exception) as refused:
        clean_url(url)
    assert "cannot be parsed" in str(refused.value)


def test_addresses_that_lead_inside_are_refused_in_production(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    inside = [
        "127.0.0.1",
        "10.0.0.1",
        "169.254.169.254",
        "192.0.0.192",
        "100.64.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::1",
        "2002:a9fe:a9fe::",
        "fec0::1",
        "::127.0.0.1",
        "fe80::1",
        "fc00::1",
        "224.0.0.1",
    ]
    assert [a for a in inside if address_allowed(ipaddress.ip_address(a))] == []
    assert address_allowed(ipaddress.ip_address("93.184.215.14"))
    assert address_allowed(ipaddress.ip_address("2606:4700::1"))


def test_a_secret_sealed_under_a_rotated_secret_key_still_signs_through_the_fallbacks(settings):
    with receiver() as hooks:
        endpoint = ping(hooks.url)
        old = settings.SECRET_KEY
        settings.SECRET_KEY = "a-new-secret-key-" + "z" * 50
        run_tasks()
        attempt = WebhookAttempt.objects.get()
        assert "cannot be read" in attempt.error and hooks.received == []
        settings.SECRET_KEY_FALLBACKS = [old]
        call_command("webhooks", "list")  # still lists
        WebhookDelivery.objects.update(next_attempt_at=None)
        from apps.webhooks.delivery import deliver

        assert deliver(WebhookDelivery.objects.get().message_id, manual=True) is True
    assert len(hooks.received) == 1 and endpoint.pk


def test_changing_an_endpoints_url_needs_the_password_again(client):
    workspace = WorkspaceFactory()
    owner = owner_of(workspace)
    made = endpoint_create(
        workspace,
        url="https://siem.example.com/in",
        event_types=["key.revoked"],
        actor=Actor.of_user(owner),
    )
    stale = PlainClient()
    stale.force_login(owner)  # signed in, but no password given lately
    edit = {"url": "https://attacker.example/x", "event_types": ["key.revoked"], "enabled": "on"}
    answer = stale.post(f"/settings/webhooks/{made.endpoint.pk}/", edit)
    assert answer.status_code == 302 and "reauthenticate" in answer["Location"]
    assert stale.post(f"/settings/webhooks/{made.endpoint.pk}/remove/").status_code == 302
    made.endpoint.refresh_from_db()
    assert made.endpoint.url == "https://siem.example.com/in"


def test_the_command_refuses_a_workspace_that_is_not_one():
    with pytest.raises(CommandError, match="No workspace abc"):
        call_command("webhooks", "list", "--workspace", "abc")
