"""Something in the demo workspace (`manage.py demo`, DEBUG only), so that a newcomer sees what
the product does before making anything: products, pages, communities with members and posts,
a teammate, keys of every kind and state (restricted, expiring, revoked, a member's, a CLI
login's, a connected app's), a month of usage and of the request log. Made once, through the
same services as everything else; a workspace that already has products is left as it is."""

from datetime import timedelta

from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import ALL_SCOPES
from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions
from apps.api_keys.services import api_key_create, api_key_revoke
from apps.audit.services import Actor
from apps.communities.models import Community, CommunityMembership
from apps.communities.services import community_create, post_create
from apps.metering.facts import new_request_id
from apps.metering.records import RequestEntry
from apps.oauth.issuing import (
    Approval,
    authorization_code_find,
    authorization_code_save,
    grant_create,
)
from apps.oauth.models import OAuthClient
from apps.pages.services import page_create
from apps.products.models import Product
from apps.products.services import product_create
from apps.request_log.recording import entries_write
from apps.usage.models import KeyUsageDay, KeyUsageHour
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.services import workspace_update

DEMO_DOMAIN = "demo.gatehouse.test"
PRODUCTS = [
    ("Photography Masterclass", 14_900),
    ("Studio Lighting Kit", 8_900),
    ("Portrait Retouching Course", 4_900),
]
PAGES = [
    ("Welcome to Demo Academy", "welcome", "Start here: the courses, the communities, the team."),
    ("Course schedule", "schedule", "New cohorts start on the first Monday of each month."),
    ("Refund policy", "refunds", "Full refund within 30 days of purchase, no questions asked."),
]
MEMBERS = [
    ("ada", "Photographers' Circle", "My first studio portrait", "Two lights, one reflector."),
    ("grace", "Photographers' Circle", "Golden hour in Lisbon", "Shot at f/2.8, 1/500 s."),
    ("alan", "Lighting Lab", "Softbox or umbrella?", "Which one for small rooms?"),
]


def demo_content_ensure(workspace: Workspace, owner: User) -> bool:
    """Fill the demo workspace once; False when it already has content."""
    if Product.objects.filter(workspace=workspace).exists():
        return False
    operator = Actor.of_operator("demo")
    for name, price in PRODUCTS:
        product_create(workspace=workspace, name=name, price_cents=price)
    for title, slug, body in PAGES:
        page_create(workspace=workspace, title=title, slug=slug, body=body)
    communities = {
        name: community_create(workspace=workspace, name=name)
        for name in ("Photographers' Circle", "Lighting Lab")
    }
    members = {}
    for handle, community_name, title, body in MEMBERS:
        user = _user(f"{handle}@{DEMO_DOMAIN}")
        Membership.objects.get_or_create(
            workspace=workspace, user=user, defaults={"role": Membership.Role.MEMBER}
        )
        CommunityMembership.objects.get_or_create(community=communities[community_name], user=user)
        post_create(community=communities[community_name], author=user, title=title, body=body)
        members[handle] = user
    admin = _user(f"linus@{DEMO_DOMAIN}")
    Membership.objects.get_or_create(
        workspace=workspace, user=admin, defaults={"role": Membership.Role.ADMIN}
    )
    keys = _keys(workspace, owner, admin, members["ada"], communities, operator)
    _connected_app(workspace, owner)
    _usage(keys)
    _request_log(list(ApiKey.objects.filter(workspace=workspace).order_by("pk")))
    _waiting_key(workspace, admin, operator)
    return True


def _waiting_key(workspace: Workspace, admin: User, operator: Actor) -> None:
    """Approval of keys that can change things, and an admin's key waiting for the owner."""
    workspace_update(workspace=workspace, changes={"key_approval": "write"}, actor=operator)
    workspace.refresh_from_db()
    api_key_create(
        workspace=workspace,
        user=admin,
        name="Course publisher",
        description="Publishes the spring course pages from CI; needed before Monday's launch.",
        scopes=["pages:read", "pages:write"],
        expires_at=timezone.now() + timedelta(days=90),
        actor=Actor.of_user(admin),
    )


def _user(email: str) -> User:
    user = User.objects.filter(email=email).first()
    return user or User.objects.create_user(email=email, password=None)


def _keys(
    workspace: Workspace,
    owner: User,
    admin: User,
    member: User,
    communities: dict[str, Community],
    operator: Actor,
) -> list[ApiKey]:
    now = timezone.now()
    zapier = api_key_create(
        workspace=workspace,
        user=owner,
        name="Zapier sync",
        description="Posts new community members to the CRM. Ask Linus before changing it.",
        scopes=["communities:read", "products:read"],
        expires_at=now + timedelta(days=180),
        actor=operator,
        restrictions=Restrictions(
            communities=(communities["Photographers' Circle"].pk,),
            networks=("203.0.113.0/24",),
            rate_limit_per_minute=600,
        ),
    ).key
    analytics = api_key_create(
        workspace=workspace,
        user=owner,
        name="Analytics export",
        scopes=[s for s in ALL_SCOPES if s.endswith(":read")],
        expires_at=now + timedelta(days=5),
        actor=operator,
    ).key
    old = api_key_create(
        workspace=workspace,
        user=owner,
        name="Old storefront",
        scopes=["products:read", "products:write"],
        expires_at=now + timedelta(days=90),
        actor=operator,
    ).key
    api_key_revoke(key=old, actor=operator)
    staging = api_key_create(
        workspace=workspace,
        user=admin,
        name="Staging deploy",
        scopes=["pages:read", "pages:write"],
        expires_at=now + timedelta(days=30),
        actor=operator,
    ).key
    bot = api_key_create(
        workspace=workspace,
        user=member,
        name="Ada's posting bot",
        scopes=["communities:read", "communities:write"],
        expires_at=now + timedelta(days=60),
        kind=ApiKey.Kind.MEMBER,
        actor=operator,
    ).key
    cli = api_key_create(
        workspace=workspace,
        user=owner,
        name="CLI on demo-laptop",
        scopes=list(ALL_SCOPES),
        expires_at=None,
        tag=ApiKey.Tag.CLI,
        installation_id="demo-laptop",
        actor=operator,
    ).key
    # Their last use, as requests would have stamped it.
    for key, ago, ip in [
        (zapier, timedelta(minutes=3), "203.0.113.20"),
        (analytics, timedelta(hours=5), "198.51.100.7"),
        (bot, timedelta(days=1), "192.0.2.44"),
        (cli, timedelta(days=2), "127.0.0.1"),
    ]:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now - ago, last_used_ip=ip)
    return [zapier, analytics, staging, bot]


def _connected_app(workspace: Workspace, owner: User) -> None:
    """Claude Code, connected by OAuth as the MCP Connect button does (listed under Connected
    apps, its key tagged MCP)."""
    redirect = "http://127.0.0.1:33418/callback"
    client = OAuthClient.objects.create(
        client_id="demo-claude-code",
        source=OAuthClient.Source.REGISTERED,
        client_name="Claude Code",
        redirect_uris=[redirect],
        grant_types=["authorization_code", "refresh_token"],
    )
    approval = Approval(
        client=client,
        user=owner,
        workspace=workspace,
        kind=ApiKey.Kind.WORKSPACE,
        scopes=["pages:read", "pages:write", "products:read"],
        restrictions=Restrictions(),
        redirect_uri=redirect,
        resource="http://127.0.0.1:8000/mcp",
        code_challenge="x" * 43,
        code_challenge_method="S256",
    )
    authorization_code_save(approval, "demo-code")
    code = authorization_code_find("demo-code", client)
    assert code is not None
    grant_create(code, ip="127.0.0.1")


def _usage(keys: list[ApiKey]) -> None:
    """A month of requests a day and the last day by hour: the usage charts have content."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    days, hours = [], []
    for n, key in enumerate(keys):
        for age in range(30):
            for outcome, base in (("2xx", 300), ("403", 4), ("429", 2)):
                count = (age * 37 + n * 11 + len(outcome)) % 60 + (base if age % 7 else base // 3)
                days.append(
                    KeyUsageDay(
                        key=key,
                        day=(now - timedelta(days=age)).date(),
                        operation="list_communities" if n % 2 else "get_workspace",
                        outcome=outcome,
                        count=count,
                    )
                )
        for age in range(24):
            hours.append(
                KeyUsageHour(
                    key=key,
                    hour=now - timedelta(hours=age),
                    operation="get_workspace",
                    outcome="2xx" if age % 6 else "401",
                    count=5 + (age * 13 + n) % 40,
                )
            )
    KeyUsageDay.objects.bulk_create(days)
    KeyUsageHour.objects.bulk_create(hours)


# What the demo's keys asked, by kind: (method, path, operation, status, error).
CALLS = {
    "workspace": [
        ("GET", "/api/v1/workspace", "get_workspace", 200, ""),
        ("GET", "/api/v1/products", "list_products", 200, ""),
        ("GET", "/api/v1/pages", "list_pages", 200, ""),
        ("POST", "/api/v1/pages", "create_page", 201, ""),
        ("GET", "/api/v1/communities", "list_communities", 403, "insufficient-scope"),
        ("GET", "/api/v1/products", "list_products", 429, "rate-limited"),
    ],
    "member": [
        ("GET", "/api/v1/communities", "list_communities", 200, ""),
        ("POST", "/api/v1/communities/1/posts", "create_post", 201, ""),
        ("GET", "/api/v1/products", "list_products", 403, "insufficient-scope"),
    ],
}
ADDRESSES = ("203.0.113.7", "203.0.113.8", "198.51.100.23")
AGENTS = ("zapier-webhooks/2.1", "python-httpx/0.28.1", "gatehouse-cli/1.0", "curl/8.5.0")


def _request_log(keys: list[ApiKey]) -> None:
    """A month of the request log, a few requests an hour for each key (and the revoked key's
    last day before its revocation): the key pages, Logs and the blast radius have content."""
    now = timezone.now()
    entries = []
    for n, key in enumerate(keys):
        calls = CALLS["member" if key.kind == ApiKey.Kind.MEMBER else "workspace"]
        end = key.revoked_at or now
        for age_hours in range(0, 30 * 24, 3 + n % 4):
            at = end - timedelta(hours=age_hours, minutes=(n * 7 + age_hours) % 60)
            if at < key.created_at - timedelta(days=30):
                break
            method, path, operation, status, error = calls[(age_hours // 3 + n) % len(calls)]
            door = "mcp" if (age_hours + n) % 5 == 0 and method == "GET" else "api"
            entries.append(
                RequestEntry(
                    request_id=new_request_id(),
                    at=at,
                    key_id=key.pk,
                    door=door,
                    method="POST" if door == "mcp" else method,
                    path="/mcp" if door == "mcp" else path,
                    operation=operation,
                    status=status,
                    error=error,
                    duration_ms=round(1.5 + (age_hours * 13 + n) % 40 / 4, 2),
                    client_ip=ADDRESSES[(age_hours // 24 + n) % len(ADDRESSES)],
                    user_agent=AGENTS[n % len(AGENTS)],
                    object_id=str(100 + age_hours) if status == 201 else "",
                )
            )
    entries_write(entries)
