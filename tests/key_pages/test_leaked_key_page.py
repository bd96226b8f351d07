"""A leaked key's page says "leaked" first: where it was found, when, what was revoked, and
the objects it created, named and linked."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.leaks.reports import leaked_key_revoke
from apps.metering.facts import new_request_id
from apps.metering.records import RequestEntry
from apps.pages.models import Page
from apps.request_log.recording import entries_write
from tests.factories import make_community, make_key

pytestmark = pytest.mark.django_db

URL = "https://github.com/acme/storefront/blob/main/settings.env#L12"


def request(key, operation: str, object_id: str, status: int = 201) -> RequestEntry:
    return RequestEntry(
        request_id=new_request_id(),
        at=timezone.now() - timedelta(minutes=5),
        key_id=key.pk,
        door="api",
        method="POST",
        path="/api/v1/x",
        operation=operation,
        status=status,
        error="",
        duration_ms=3.0,
        client_ip="203.0.113.7",
        user_agent="curl/8",
        object_id=object_id,
    )


def test_a_leaked_keys_page_opens_on_the_leak_and_names_what_it_created(client, owner):
    workspace = owner.memberships.get().workspace
    key = make_key(user=owner, name="Storefront sync").key
    page = Page.objects.create(workspace=workspace, title="Spring sale", slug="spring")
    community = make_community(workspace, "Makers")
    made = make_key(user=owner, name="Made by the leak").key
    entries_write(
        [
            request(key, "create_page", str(page.pk)),
            request(key, "mcp:create_key", str(made.pk)),
            request(key, "create_page", "999999"),
        ]
    )
    del community  # a community the key never touched stays out of it
    leaked_key_revoke(key, URL, "content")
    html = client.get(f"/integrations/api/keys/{key.pk}/").content.decode()
    text = re.sub(r"<[^>]+>", "", html)
    assert re.search(
        r"<h1>Storefront sync <span class=\"badge badge--revoked\">Leaked</span>", html
    )
    banner = html.split('data-testid="leak-banner"')[1].split("</section>")[0]
    assert f'href="{URL}"' in banner
    assert "exposed in public" in banner and "Reported" in banner and "401 revoked-key" in banner
    assert html.index('data-testid="leak-banner"') < html.index('id="blast-radius"')
    objects = html.split('data-testid="blast-objects"')[1].split("</table>")[0]
    assert "<strong>Spring sale</strong>" in objects
    assert f'<a href="/integrations/api/keys/{made.pk}/">Made by the leak ({made.hint})</a>' in (
        objects
    )
    assert "#999999" in objects and "(deleted since)" in objects
    assert "Page Spring sale" in re.sub(r"<[^>]+>", "", objects).replace("\n", " ")
    assert "Leaked" in text


def test_a_key_revoked_by_hand_says_revoked_and_shows_no_leak_banner(client, owner):
    from apps.api_keys.services import api_key_revoke
    from apps.audit.services import Actor

    key = make_key(user=owner, name="Old").key
    api_key_revoke(key=key, actor=Actor.of_user(owner))
    html = client.get(f"/integrations/api/keys/{key.pk}/").content.decode()
    assert 'data-testid="leak-banner"' not in html
    assert '<span class="badge badge--revoked">Revoked</span>' in html
