"""How apps identify themselves: client ID metadata documents (fetched within limits, cached
by their headers, never from a private address outside development) and dynamic
registration (throttled, public clients only, unused ones deleted after 30 days)."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.oauth.housekeeping import oauth_prune
from apps.oauth.models import OAuthClient
from tests.client import Client
from tests.factories import WorkspaceFactory, owner_of

from .documents import document_server
from .helpers import REDIRECT, authorize_url, connect, pkce, register

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser():
    client = Client()
    client.force_login(owner_of(WorkspaceFactory(name="Acme")))
    return client


@pytest.fixture
def documents(tmp_path, settings):
    with document_server(tmp_path) as server:
        settings.OAUTH_DOCUMENT_CA_FILE = str(server.ca_file)
        settings.OAUTH_DOCUMENT_ALLOW_PRIVATE = True
        yield server


def document(client_id: str, **fields) -> dict:
    return {"client_id": client_id, "client_name": "Doc App", "redirect_uris": [REDIRECT], **fields}


def consent(browser, client_id: str):
    return browser.get(authorize_url(client_id, pkce()[1]))


def test_a_document_is_fetched_once_and_kept_as_its_cache_headers_say(browser, documents):
    client_id = documents.url + "/app.json"
    documents.serve("/app.json", document(client_id), headers={"Cache-Control": "max-age=600"})
    assert b"Doc App" in consent(browser, client_id).content
    assert b"Doc App" in consent(browser, client_id).content
    assert documents.hits == ["/app.json"]
    documents.serve("/app.json", document(client_id, client_name="Renamed"))
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        browser.force_login(browser_user())  # sudo mode has lapsed by then
        assert b"Renamed" in consent(browser, client_id).content
    assert documents.hits == ["/app.json", "/app.json"]


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"body": b"{" + b" " * 6000 + b"}"}, "larger than 5 KB"),
        ({"status": 302, "headers": {"Location": "https://example.com/x.json"}}, "HTTP 302"),
        ({"body": b"not json"}, "not a JSON object"),
        ({"status": 404}, "HTTP 404"),
    ],
)
def test_a_document_beyond_the_limits_is_refused_with_the_reason(browser, documents, answer, says):
    client_id = documents.url + "/bad.json"
    documents.serve("/bad.json", **answer)
    page = consent(browser, client_id)
    assert page.status_code == 400 and "Location" not in page
    assert says in page.content.decode()
    assert not OAuthClient.objects.exists()


def test_a_document_that_names_another_client_or_a_secret_is_refused(browser, documents):
    client_id = documents.url + "/other.json"
    documents.serve("/other.json", document("https://elsewhere.example/app.json"))
    assert b"names another client_id" in consent(browser, client_id).content
    documents.serve(
        "/other.json", document(client_id, token_endpoint_auth_method="private_key_jwt")
    )
    assert b"only public clients" in consent(browser, client_id).content


def test_a_document_slower_than_five_seconds_is_refused(browser, documents):
    client_id = documents.url + "/slow.json"
    documents.serve("/slow.json", document(client_id), delay=7)
    page = consent(browser, client_id)
    assert page.status_code == 400 and b"could not be fetched" in page.content


def test_no_document_is_fetched_from_a_private_address_outside_development(
    browser, documents, settings
):
    settings.OAUTH_DOCUMENT_ALLOW_PRIVATE = False
    client_id = documents.url + "/app.json"
    documents.serve("/app.json", document(client_id))
    page = consent(browser, client_id)
    assert page.status_code == 400 and b"private address" in page.content
    assert documents.hits == []  # refused before connecting


def test_registration_makes_a_public_client_without_a_secret(client):
    answer = register(client)
    assert answer["client_id"] and "client_secret" not in answer
    assert answer["token_endpoint_auth_method"] == "none"
    assert answer["redirect_uris"] == [REDIRECT]
    stored = OAuthClient.objects.get()
    assert stored.source == OAuthClient.Source.REGISTERED and stored.client_name == "Test Assistant"


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "invalid_client_metadata"),
        (b"[]", "invalid_client_metadata"),
        (
            b'{"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": '
            b'"client_secret_basic"}',
            "invalid_client_metadata",
        ),
        (
            b'{"redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}',
            "invalid_client_metadata",
        ),
        (b'{"redirect_uris": ["http://a.example/cb"]}', "invalid_redirect_uri"),
        # Text PostgreSQL refuses (a 500 there) and control characters: refused by name.
        (
            b'{"redirect_uris": ["https://a.example/cb"], "client_uri": "https://a.example/\\u0000"}',
            "invalid_client_metadata",
        ),
        (
            b'{"redirect_uris": ["https://a.example/cb"], "software_id": "\\ud800"}',
            "invalid_client_metadata",
        ),
        (
            b'{"redirect_uris": ["https://a.example/cb"], "contacts": ["a@example.com\\n"]}',
            "invalid_client_metadata",
        ),
    ],
)
def test_bad_registrations_are_refused_with_rfc7591_errors(client, body, error):
    answer = client.post("/oauth/register", body, content_type="application/json")
    assert answer.status_code == 400 and answer.json()["error"] == error
    assert not OAuthClient.objects.exists()


def test_a_registration_is_answered_with_what_was_kept_or_refused(client):
    kept = register(client, client_name="n" * 100, client_uri="https://a.example/" + "p" * 1982)
    stored = OAuthClient.objects.get()
    assert kept["client_name"] == stored.client_name == "n" * 100
    assert kept["client_uri"] == stored.client_uri and len(stored.client_uri) == 2000
    for field, value, limit in (
        ("client_name", "n" * 101, 100),
        ("client_uri", "https://a.example/" + "p" * 1983, 2000),
    ):
        answer = client.post(
            "/oauth/register",
            {"redirect_uris": [REDIRECT], field: value},
            content_type="application/json",
        )
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_client_metadata"
        assert f"{field} must be at most {limit} characters" in answer.json()["error_description"]
    assert OAuthClient.objects.count() == 1


def test_registrations_are_limited_per_address(client, settings):
    settings.OAUTH_REGISTRATIONS_PER_MINUTE = 3
    for _ in range(3):
        register(client)
    refused = client.post(
        "/oauth/register", {"redirect_uris": [REDIRECT]}, content_type="application/json"
    )
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert OAuthClient.objects.count() == 3


def test_the_daily_job_deletes_registrations_unused_for_30_days(client, browser):
    used = connect(client, browser, browser_workspace(browser))["client_id"]
    unused_old = register(client, client_name="Old")["client_id"]
    with time_machine.travel(timezone.now() + timedelta(days=31)):
        unused_new = register(client, client_name="New")["client_id"]
        oauth_prune()
    left = set(OAuthClient.objects.values_list("client_id", flat=True))
    assert left == {used, unused_new}
    assert unused_old not in left


def browser_user():
    from apps.workspaces.models import Membership

    return Membership.objects.get(workspace__name="Acme").user


def browser_workspace(browser):
    from apps.workspaces.models import Workspace

    return Workspace.objects.get(name="Acme")
