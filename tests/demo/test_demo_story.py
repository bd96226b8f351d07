"""The demo tells one story (issue 44 item 8): after `manage.py demo` on a fresh database, what
the dashboard and the API say about each key's use agrees with the request log. Read as the
demo's owner reads it: the key list, each key's page, Usage, Logs (its CSV), Connected apps."""

import csv
import io
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.accounts.models import User
from apps.demo.management.commands.demo import DEMO_EMAIL
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db

REFUSED = {401, 403, 429}
LIST = "/integrations/api/?state=all"


def page_of(key_id: int) -> str:
    return f"/integrations/api/keys/{key_id}/"


@pytest.fixture
def demo(settings, tmp_path, client):
    """The demo made on a fresh database, and its owner signed in on `client`."""
    settings.DEBUG = True
    settings.DEMO_KEY_FILE = str(tmp_path / "demo-key")
    call_command("demo", "--base-url", "http://127.0.0.1:8000", stdout=io.StringIO())
    client.force_login(User.objects.get(email=DEMO_EMAIL))
    client.settings_tmp = tmp_path
    return client


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(microsecond=0)


def logged(client, **query: str) -> list[dict]:
    """The Logs page's rows (its CSV export), each with its moment."""
    answer = client.get("/logs/export.csv", query)
    assert answer.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(answer.streaming_content).decode())))
    for row in rows:
        row["at"], row["status"] = moment(row["time_utc"]), int(row["status"])
    return rows


def used_the_key(row: dict) -> bool:
    """A request past the key's checks: what stamps a key's last use (docs/product.md)."""
    return row["status"] not in (401, 429) and row["error"] != "ip-not-allowed"


def key_named(listing: str, name: str) -> int:
    ids = [int(pk) for pk in re.findall(r'<tr id="key-(\d+)"', listing)]
    (key_id,) = [pk for pk in ids if f">{name}</a>" in row_of(listing, pk)]
    return key_id


def row_of(listing: str, key_id: int) -> str:
    return re.search(rf'<tr id="key-{key_id}".*?</tr>', listing, re.S).group(0)


def key_ids(client) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr id="key-(\d+)"', client.get(LIST).content.decode())]


def fact(page: str, label: str) -> str:
    found = re.search(rf"<dt>{label}</dt><dd[^>]*>(.*?)</dd>", page, re.S)
    assert found, f"no {label} on the page"
    return found.group(1)


def stamp(html: str) -> datetime | None:
    found = re.search(r'<time datetime="([^"]+)"', html)
    return moment(found.group(1)) if found else None


def chart_total(page: str, title: str) -> int:
    found = re.search(rf"{title}</strong> <span class=\"muted\">([\d,]+) request", page)
    assert found, f"no chart {title}"
    return int(found.group(1).replace(",", ""))


def last_used_in_list(listing: str, key_id: int) -> datetime | None:
    cell = re.search(r'<td data-label="Last used">(.*?)</td>', row_of(listing, key_id), re.S)
    return stamp(cell.group(1))


def test_each_keys_last_use_is_its_last_logged_request_past_its_checks(demo):
    rows = logged(demo)
    listing = demo.get(LIST).content.decode()
    assert len(key_ids(demo)) >= 9
    for key_id in key_ids(demo):
        own = [row for row in rows if int(row["key_id"]) == key_id]
        page = demo.get(page_of(key_id)).content.decode()
        last = max((row["at"] for row in own if used_the_key(row)), default=None)
        assert stamp(fact(page, "Last used")) == last, key_id
        assert last_used_in_list(listing, key_id) == last, key_id
        if last is not None:  # and from the address of that request
            address = next(r["client_ip"] for r in own if r["at"] == last and used_the_key(r))
            assert address in fact(page, "Last used")


def test_no_key_was_created_after_its_first_logged_request(demo):
    rows = logged(demo)
    listing = demo.get(LIST).content.decode()
    for key_id in key_ids(demo):
        first = min((row["at"] for row in rows if int(row["key_id"]) == key_id), default=None)
        page = demo.get(page_of(key_id)).content.decode()
        created = stamp(fact(page, "Created"))
        in_list = re.search(r'<td data-label="Created">(.*?)</td>', row_of(listing, key_id), re.S)
        assert stamp(in_list.group(1)) == created
        assert first is None or created <= first, key_id


def test_each_keys_request_counts_agree_with_its_logged_requests(demo):
    now = timezone.now()
    first_day = (now - timedelta(days=29)).date()
    this_hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    rows = logged(demo, since=first_day.isoformat())
    for key_id in key_ids(demo):
        own = [row for row in rows if int(row["key_id"]) == key_id]
        page = demo.get(page_of(key_id)).content.decode()
        assert chart_total(page, "Requests a day, last 30 days") == len(own), key_id
        last_hours = [row for row in own if row["at"] >= this_hour - timedelta(hours=23)]
        assert chart_total(page, "Requests an hour, last 24 hours") == len(last_hours), key_id


def test_usage_counts_the_keys_and_requests_that_logs_show(demo):
    first_day = (timezone.now() - timedelta(days=29)).date()
    rows = logged(demo, since=first_day.isoformat())
    usage = demo.get("/usage/").content.decode()
    numbers = dict(
        re.findall(r'<span class="muted small">([^<]+)</span><strong>([\d,]+)</strong>', usage)
    )
    assert int(numbers["Keys in use"]) == len({row["key_id"] for row in rows}) >= 8
    assert int(numbers["Requests, 30 days"].replace(",", "")) == len(rows)


def test_each_keys_refusals_of_the_last_day_are_its_refused_requests_in_logs(demo):
    since = timezone.now().replace(microsecond=0) - timedelta(hours=24)
    rows = [row for row in logged(demo) if row["at"] >= since and row["status"] in REFUSED]
    for key_id in key_ids(demo):
        page = demo.get(page_of(key_id)).content.decode()
        shown = Counter(
            {
                reason: int(n)
                for n, reason in re.findall(
                    r'(\d+) × <span class="mono">([^<]+)<', fact(page, "Refused, last 24 hours")
                )
            }
        )
        assert shown == Counter(row["error"] for row in rows if int(row["key_id"]) == key_id)
    assert {row["error"] for row in rows} >= {"revoked-key", "ip-not-allowed", "rate-limited"}


def test_the_revoked_keys_page_says_what_it_did_as_logs_do(demo):
    listing = demo.get(LIST).content.decode()
    key_id = key_named(listing, "Old storefront")
    page = demo.get(page_of(key_id)).content.decode()
    did = re.search(r'data-testid="blast-radius".*?: (\d+) requests?\.', page, re.S)
    own = [row for row in logged(demo) if int(row["key_id"]) == key_id]
    assert own and int(did.group(1)) == len(own)
    assert stamp(fact(page, "Last used")) is not None


def test_the_leaked_keys_page_says_where_it_leaked_and_what_it_did(demo):
    listing = demo.get(LIST).content.decode()
    pages = [demo.get(page_of(key_id)).content.decode() for key_id in key_ids(demo)]
    leaked = [page for page in pages if 'data-testid="leak-banner"' in page]
    assert len(leaked) == 1 and "Leaked" in leaked[0] and "has been revoked" in leaked[0]
    assert "https://github.com/demo-academy/newsletter-tools/blob/main/.env" in leaked[0]
    assert "GitHub secret scanning" in leaked[0]
    radius = re.search(r'data-testid="blast-addresses".*?</table>', leaked[0], re.S).group(0)
    assert "192.0.2.200" in radius  # the stranger who used it, beside its own job
    assert "Newsletter importer" in listing
    # What it created is there to be found: the stranger's posts, in the circle.
    table = re.search(r'data-testid="blast-objects".*?</table>', leaked[0], re.S).group(0)
    created = re.findall(r'<span class="muted small mono">#(\d+)</span>', table)
    secret = (demo.settings_tmp / "demo-key").read_text().strip()
    communities = demo.get("/api/v1/communities", **auth(secret)).json()["data"]
    posts = set()
    for community in communities:
        path = f"/api/v1/communities/{community['id']}/posts"
        answer = demo.get(path, {"limit": 100}, **auth(secret))
        posts |= {str(post["id"]) for post in answer.json()["data"]}
    assert created and set(created) <= posts


def test_a_connected_apps_last_use_is_its_last_logged_call(demo):
    rows = logged(demo)
    apps = demo.get("/integrations/connected-apps/").content.decode()
    row = re.search(r"<tr>.*?Claude Code.*?</tr>", apps, re.S).group(0)
    cell = re.search(r'<td data-label="Last used">(.*?)</td>', row, re.S).group(1)
    listing = demo.get(LIST + "&kind=mcp").content.decode()
    (key_id,) = [int(pk) for pk in re.findall(r'<tr id="key-(\d+)"', listing)]
    calls = [r["at"] for r in rows if int(r["key_id"]) == key_id and used_the_key(r)]
    assert calls and stamp(cell) == max(calls)
    assert {r["door"] for r in rows if int(r["key_id"]) == key_id} == {"mcp"}


def test_the_api_says_the_same_last_use_and_requests(demo):
    rows = logged(demo)
    owner = User.objects.get(email=DEMO_EMAIL)
    reader = make_key(user=owner, workspace=owner.memberships.get().workspace, scopes=["keys:read"])
    for key_id in {int(row["key_id"]) for row in rows}:
        own = [row for row in rows if int(row["key_id"]) == key_id]
        key = demo.get(f"/api/v1/keys/{key_id}", **auth(reader.secret)).json()
        last = max(row["at"] for row in own if used_the_key(row))
        assert moment(key["lastUsedAt"]) == last, key["name"]
        seen, cursor = 0, None
        while True:
            query = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            answer = demo.get(f"/api/v1/keys/{key_id}/requests", query, **auth(reader.secret))
            seen += len(answer.json()["data"])
            if not (cursor := answer.json()["next"]):
                break
        assert seen == len(own), key["name"]


def test_each_service_account_was_made_before_its_keys_and_its_history_says_so(demo):
    from apps.api_keys.models import ApiKey
    from apps.audit.models import AuditEvent
    from apps.workspaces.models import ServiceAccount

    accounts = list(ServiceAccount.objects.all())
    assert accounts
    for account in accounts:
        first_key = ApiKey.objects.filter(user_id=account.user_id).order_by("created_at").first()
        assert first_key is not None and account.created_at <= first_key.created_at
        made = AuditEvent.objects.get(
            action="service_account.created", data__serviceAccount=account.pk
        )
        assert made.created_at <= first_key.created_at


def test_everyone_joined_and_everything_was_made_before_the_keys_that_use_it(demo):
    """Issue 54 item 14: the Team page, communities, pages and products are not 'today' beside
    keys weeks old; each person joined before their first key, each community before a key
    limited to it, and the workspace before all of them."""
    from apps.api_keys.models import ApiKey
    from apps.communities.models import Community, CommunityMembership
    from apps.pages.models import Page
    from apps.products.models import Product
    from apps.workspaces.models import Membership, Workspace

    workspace = Workspace.objects.get(name="Demo Academy")
    today = timezone.now() - timedelta(hours=12)
    oldest_key = ApiKey.objects.filter(workspace=workspace).order_by("created_at").first()
    assert workspace.created_at < oldest_key.created_at
    for membership in Membership.objects.filter(workspace=workspace).select_related("user"):
        first = ApiKey.objects.filter(user=membership.user).order_by("created_at").first()
        if first is not None and first.name != "Course publisher":
            assert membership.created_at <= first.created_at, membership.user.email
        if not membership.user.is_service_account:
            assert membership.created_at < today, membership.user.email
    for key in ApiKey.objects.filter(workspace=workspace, community_ids__isnull=False):
        for community in Community.objects.filter(pk__in=key.community_ids):
            assert community.created_at < key.created_at
    assert not CommunityMembership.objects.filter(created_at__gte=today).exists()
    # What the owner set up (a key's request's own creations keep that request's time).
    from apps.demo.content import PAGES, PRODUCTS

    day_one = (
        [Product.objects.get(name=name) for name, _ in PRODUCTS]
        + [Page.objects.get(slug=slug) for _, slug, _ in PAGES]
        + list(Community.objects.filter(workspace=workspace))
    )
    for made in day_one:
        assert made.created_at < oldest_key.created_at, made
    team = demo.get("/settings/team/").content.decode()
    assert "ago" in team and not re.search(
        r"(?:Joined|joined)[^<]{0,40}(?:today|minutes? ago)", team
    )


def test_each_keys_lifetime_is_one_of_the_expiry_choices_and_its_holder_made_it(demo):
    from apps.api_keys.models import ApiKey
    from apps.api_keys.policy import EXPIRY_DAY_CHOICES
    from apps.audit.models import AuditEvent

    for key in ApiKey.objects.exclude(tag=ApiKey.Tag.MCP).filter(expires_at__isnull=False):
        days = (key.expires_at - key.created_at) / timedelta(days=1)
        assert round(days, 3) in EXPIRY_DAY_CHOICES, (key.name, days)
    for event in AuditEvent.objects.filter(action="key.created").select_related("key__user"):
        assert "operator" not in event.actor_label, (event.key.name, event.actor_label)
        assert event.actor_label == event.key.user.email or event.key.user.is_service_account
