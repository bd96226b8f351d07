"""Something in the demo workspace (`manage.py demo`, DEBUG only), so that a newcomer sees what
the product does before making anything: products, pages, communities with members and posts,
a teammate, keys of every kind and state (restricted, expiring, revoked, leaked, a member's, a
CLI login's, a connected app's, one waiting for approval), and a month of their requests, from
which every date, count and log row the pages show is derived (apps/demo/history.py). Made
once, through the same services as everything else; a workspace that already has products is
left as it is."""

from django.utils import timezone

from apps.accounts.models import User
from apps.communities.models import CommunityMembership
from apps.communities.services import community_create, post_create
from apps.pages.services import page_create
from apps.products.models import Product
from apps.products.services import product_create
from apps.workspaces.models import Membership, Workspace

from .beginning import beginning_write
from .keys import demo_keys_create, waiting_key_create
from .seeding import history_write

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
    # From the workspace's opening (just before, in `manage.py demo`) on, all of it is moved
    # back to the story's beginning.
    seeded_at = min(timezone.now(), workspace.created_at)
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
    circle = communities["Photographers' Circle"]
    keys = demo_keys_create(workspace, owner, admin, members["ada"], circle)
    history_write(keys, circle)
    beginning_write(
        workspace, owner, admin, list(members.values()), seeded_at=seeded_at, now=timezone.now()
    )
    waiting_key_create(workspace, owner, admin)
    return True


def _user(email: str) -> User:
    user = User.objects.filter(email=email).first()
    return user or User.objects.create_user(email=email, password=None)
