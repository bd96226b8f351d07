"""`manage.py demo` (what `python3 dev.py run` starts with): a demo workspace with something in
it, made once."""

import re
from datetime import timedelta
from io import StringIO

from django.core.management import call_command
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.communities.models import Community, Post
from apps.oauth.models import OAuthGrant
from apps.pages.models import Page
from apps.products.models import Product
from apps.request_log.models import RequestLogEntry
from apps.usage.models import KeyUsageDay
from apps.workspaces.models import Membership, Workspace


def start() -> str:
    out = StringIO()
    call_command("demo", "--base-url", "http://127.0.0.1:8000", stdout=out)
    return out.getvalue()


def test_the_demo_workspace_has_something_in_it_once(db, settings, tmp_path, client):
    settings.DEBUG = True
    settings.DEMO_KEY_FILE = str(tmp_path / "demo-key")
    first = start()
    assert "filled with demo products" in first
    workspace = Workspace.objects.get(name="Demo Academy")
    # Its own, and those its keys' made-up requests created (tests/demo checks them).
    assert Product.objects.filter(workspace=workspace, name="Studio Lighting Kit").exists()
    assert Product.objects.filter(workspace=workspace).count() > 3
    assert Page.objects.filter(workspace=workspace, slug="welcome").exists()
    assert Page.objects.filter(workspace=workspace).count() > 3
    assert Community.objects.filter(workspace=workspace).count() == 2
    assert Post.objects.filter(community__workspace=workspace).count() > 3
    roles = set(Membership.objects.filter(workspace=workspace).values_list("role", flat=True))
    assert roles == {"owner", "admin", "member"}
    keys = ApiKey.objects.filter(workspace=workspace)
    assert keys.in_state("revoked").exists() and keys.filter(tag="cli").exists()
    assert keys.filter(tag="mcp").exists() and OAuthGrant.objects.exists()
    assert keys.filter(kind="member").exists()
    assert keys.exclude(allowed_networks=[]).exists()  # a restricted one
    # Approval of write keys is on, and an admin's key waits for the owner.
    assert workspace.key_approval == "write"
    waiting = keys.in_state("pending").get()
    assert waiting.user.memberships.get(workspace=workspace).role == "admin"
    assert KeyUsageDay.objects.filter(key__workspace=workspace).count() >= 30
    log = RequestLogEntry.objects.filter(workspace_id=workspace.pk)
    assert log.filter(at__lt=timezone.now() - timedelta(days=25)).exists()  # a month of it
    assert log.filter(status__gte=400).exists() and log.filter(door="mcp").exists()
    revoked = keys.in_state("revoked").get(name="Old storefront")
    assert log.filter(key_id=revoked.pk, at__gte=revoked.revoked_at - timedelta(days=1)).exists()
    counts = (Product.objects.count(), ApiKey.objects.count(), KeyUsageDay.objects.count())
    again = start()
    assert "filled with" not in again
    assert (Product.objects.count(), ApiKey.objects.count(), KeyUsageDay.objects.count()) == counts
    assert RequestLogEntry.objects.filter(workspace_id=workspace.pk).count() == log.count()
    # The demo key it prints works, and sees the demo's products.
    secret = re.search(r"Demo key:\s+(\S+)", again).group(1)
    answer = client.get("/api/v1/products", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert answer.status_code == 200
    assert len(answer.json()["data"]) == Product.objects.filter(workspace=workspace).count()
