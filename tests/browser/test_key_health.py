"""Key health in Chromium: a count's button acts on all it counts, after a page naming them."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.api_keys.models import ApiKey
from tests.browser.test_dashboard import sign_in
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_revoking_every_idle_key_from_its_count(page, live_server, shoot):
    owner = owner_of(email="owner@acme.test")
    for name in ("Old export", "Old import"):
        made = make_key(user=owner, name=name)
        ApiKey.objects.filter(pk=made.key.pk).update(
            created_at=timezone.now() - timedelta(days=120)
        )
    sign_in(page, "owner@acme.test")
    page.goto("/integrations/api/health/")
    page.get_by_test_id("act-idle-90").click()
    page.wait_for_url("**/health/idle-90/act/")
    assert page.text_content("h1").strip() == "Revoke all 2 keys?"
    rows = page.get_by_test_id("act-row")
    assert rows.count() == 2
    assert "Old export" in rows.nth(0).text_content()
    assert "Old import" in rows.nth(1).text_content()
    shoot(page, "54-key-health-act")
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()
    page.get_by_test_id("act-confirm").click()
    page.wait_for_url("**/integrations/api/health/")
    assert "Revoked 2 keys." in page.text_content(".flashes")
    assert ApiKey.objects.filter(revoked_at__isnull=False).count() == 2
    assert page.get_by_test_id("act-idle-90").count() == 0  # nothing left to act on
