"""GitHub secret-scanning reports: signed with a key pair made here, sent to the real endpoint."""

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.core import mail

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.leaks.reports import parse_public_keys
from tests.conftest import auth, run_tasks
from tests.factories import make_key

pytestmark = pytest.mark.django_db
URL = "/api/v1/secret-scanning/reports"


def pem(private_key) -> str:
    return (
        private_key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


@pytest.fixture
def github(settings):
    """GitHub's signing key, a retired one, and the settings that trust them."""
    current = ec.generate_private_key(ec.SECP256R1())
    retired = ec.generate_private_key(ec.SECP256R1())
    settings.SECRET_SCANNING_PUBLIC_KEYS = json.dumps(
        {
            "public_keys": [
                {"key_identifier": "current-id", "key": pem(current), "is_current": True},
                {"key_identifier": "retired-id", "key": pem(retired), "is_current": False},
            ]
        }
    )
    parse_public_keys.cache_clear()
    yield {"current": current, "retired": retired}
    parse_public_keys.cache_clear()


def send(client, body: bytes, private_key=None, identifier="current-id"):
    headers = {}
    if private_key is not None:
        signature = private_key.sign(body, ec.ECDSA(hashes.SHA256()))
        headers = {
            "HTTP_GITHUB_PUBLIC_KEY_IDENTIFIER": identifier,
            "HTTP_GITHUB_PUBLIC_KEY_SIGNATURE": base64.b64encode(signature).decode(),
        }
    return client.post(URL, body, content_type="application/json", **headers)


def report(*tokens: str) -> bytes:
    return json.dumps(
        [
            {
                "token": t,
                "type": "gatehouse_workspace_key",
                "url": "https://github.com/a/b/1",
                "source": "content",
            }
            for t in tokens
        ]
    ).encode()


def test_a_signed_report_revokes_the_key_audits_and_tells_the_holder(
    client, github, django_capture_on_commit_callbacks
):
    created = make_key(name="Zapier")
    with django_capture_on_commit_callbacks(execute=True):
        response = send(client, report(created.secret), github["current"])
    assert response.status_code == 200
    assert response.json() == [
        {
            "token_hash": hashlib.sha256(created.secret.encode()).hexdigest(),
            "token_type": "gatehouse_workspace_key",
            "label": "true_positive",
        }
    ]
    answer = client.get("/api/v1/workspace", **auth(created.secret))
    assert answer.json()["error"] == "revoked-key"
    leaked = AuditEvent.objects.get(action="key.leaked")
    assert leaked.data["url"] == "https://github.com/a/b/1" and leaked.key_id == created.key.pk
    assert AuditEvent.objects.filter(action="key.revoked", key=created.key).count() == 1
    assert mail.outbox == []  # sent by a worker, not in the request
    run_tasks()
    assert len(mail.outbox) == 1 and "Zapier" in mail.outbox[0].subject
    assert "https://github.com/a/b/1" in mail.outbox[0].body
    assert f"/integrations/api/keys/{created.key.pk}/#blast-radius" in mail.outbox[0].body
    assert created.secret not in mail.outbox[0].body


@pytest.mark.parametrize("how", ["forged", "missing", "retired", "unknown id", "not base64"])
def test_a_report_without_a_good_signature_revokes_nothing(client, github, how):
    created = make_key()
    body = report(created.secret)
    if how == "forged":
        response = send(client, body, ec.generate_private_key(ec.SECP256R1()))
    elif how == "missing":
        response = send(client, body)
    elif how == "retired":
        response = send(client, body, github["retired"], identifier="retired-id")
    elif how == "unknown id":
        response = send(client, body, github["current"], identifier="someone-else")
    else:
        response = client.post(
            URL,
            body,
            content_type="application/json",
            HTTP_GITHUB_PUBLIC_KEY_IDENTIFIER="current-id",
            HTTP_GITHUB_PUBLIC_KEY_SIGNATURE="%%%not-base64%%%",
        )
    assert response.status_code == 403
    assert response.json()["error"] == "invalid-signature"
    assert ApiKey.objects.get(pk=created.key.pk).revoked_at is None
    assert not AuditEvent.objects.filter(action="key.leaked").exists()


def test_a_signature_over_another_body_is_refused(client, github):
    created = make_key()
    signature = github["current"].sign(report("gwk_other"), ec.ECDSA(hashes.SHA256()))
    response = client.post(
        URL,
        report(created.secret),
        content_type="application/json",
        HTTP_GITHUB_PUBLIC_KEY_IDENTIFIER="current-id",
        HTTP_GITHUB_PUBLIC_KEY_SIGNATURE=base64.b64encode(signature).decode(),
    )
    assert response.status_code == 403
    assert ApiKey.objects.get(pk=created.key.pk).revoked_at is None


def test_unknown_tokens_are_false_positives_and_change_nothing(client, github):
    kept = make_key()
    response = send(client, report("gwk_" + "A" * 38, "not even a key"), github["current"])
    assert [item["label"] for item in response.json()] == ["false_positive", "false_positive"]
    assert ApiKey.objects.get(pk=kept.key.pk).revoked_at is None
    assert not AuditEvent.objects.filter(action__in=["key.leaked", "key.revoked"]).exists()


def test_a_repeated_report_changes_nothing(client, github, django_capture_on_commit_callbacks):
    created = make_key()
    body = report(created.secret)
    with django_capture_on_commit_callbacks(execute=True):
        send(client, body, github["current"])
        again = send(client, body, github["current"])
    assert again.status_code == 200 and again.json()[0]["label"] == "true_positive"
    assert AuditEvent.objects.filter(action="key.leaked").count() == 1
    assert AuditEvent.objects.filter(action="key.revoked").count() == 1
    run_tasks()
    assert len(mail.outbox) == 1


@pytest.mark.parametrize(
    "body", [b"{}", b"not json", b'[{"token": 1}]', b'[{"token": "x", "url": 2}]']
)
def test_a_signed_but_malformed_report_is_400(client, github, body):
    response = send(client, body, github["current"])
    assert response.status_code == 400 and response.json()["error"] == "invalid-input"


@pytest.mark.parametrize("which", ["old", "new"])
def test_a_leak_of_either_secret_of_a_rolling_key_revokes_it_and_ends_the_grace(
    client, github, which
):
    from datetime import timedelta

    from apps.api_keys.rolling import api_key_roll
    from apps.audit.services import Actor

    created = make_key(name="Zapier")
    rolled = api_key_roll(
        key=created.key, grace=timedelta(days=7), actor=Actor.of_user(created.key.user)
    )
    leaked = created.secret if which == "old" else rolled.secret
    response = send(client, report(leaked), github["current"])
    assert response.json()[0]["label"] == "true_positive"
    assert ApiKey.objects.get(pk=created.key.pk).revoked_at is not None
    for secret in (created.secret, rolled.secret):
        answer = client.get("/api/v1/workspace", **auth(secret))
        assert answer.status_code == 401 and answer.json()["error"] == "revoked-key"
    assert AuditEvent.objects.filter(action="key.leaked", key=created.key).count() == 1


def test_a_secret_whose_grace_has_ended_is_a_false_positive_and_revokes_nothing(client, github):
    from datetime import timedelta

    import time_machine
    from django.utils import timezone

    from apps.api_keys.rolling import api_key_roll
    from apps.audit.services import Actor

    created = make_key()
    api_key_roll(key=created.key, grace=timedelta(hours=1), actor=Actor.of_user(created.key.user))
    with time_machine.travel(timezone.now() + timedelta(hours=2)):
        response = send(client, report(created.secret), github["current"])
    assert response.json()[0]["label"] == "false_positive"
    assert ApiKey.objects.get(pk=created.key.pk).revoked_at is None


def test_a_malformed_key_setting_refuses_reports_instead_of_failing(client, settings):
    settings.SECRET_SCANNING_PUBLIC_KEYS = "{not json"
    created = make_key()
    private = ec.generate_private_key(ec.SECP256R1())
    response = send(client, report(created.secret), private)
    assert response.status_code == 403 and response.json()["error"] == "invalid-signature"
    assert ApiKey.objects.get(pk=created.key.pk).revoked_at is None


@pytest.fixture
def github_meta():
    """GitHub's /meta/public_keys/secret_scanning, served on loopback; `answer` sets the body."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    state = {"status": 200, "body": b""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(state["status"])
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(state["body"])

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_port}/meta/public_keys/secret_scanning"
    yield state
    server.shutdown()


def test_refreshed_keys_are_trusted_and_a_failed_refresh_keeps_the_last_good_set(
    client, settings, github_meta
):
    from django.core.management import CommandError, call_command

    settings.SECRET_SCANNING_PUBLIC_KEYS = ""
    signer = ec.generate_private_key(ec.SECP256R1())
    github_meta["body"] = json.dumps(
        {"public_keys": [{"key_identifier": "gh-1", "key": pem(signer), "is_current": True}]}
    ).encode()
    call_command("refreshsecretscanningkeys", "--url", github_meta["url"])
    first = make_key()
    answer = send(client, report(first.secret), signer, identifier="gh-1")
    assert answer.status_code == 200 and answer.json()[0]["label"] == "true_positive"

    github_meta["body"] = b"<html>rate limited</html>"
    with pytest.raises(CommandError, match="malformed.*keeping the set fetched"):
        call_command("refreshsecretscanningkeys", "--url", github_meta["url"])
    github_meta["status"] = 500
    with pytest.raises(CommandError, match="keeping the set fetched"):
        call_command("refreshsecretscanningkeys", "--url", github_meta["url"])
    second = make_key()
    answer = send(client, report(second.secret), signer, identifier="gh-1")
    assert answer.json()[0]["label"] == "true_positive"  # the last good set still holds
