"""When the demo workspace began, so that every date a page shows fits one story: the owner
opened the workspace WORKSPACE_AGE ago and put up the products, pages and communities the next
day, Linus joined two days in, the members over the following weeks (each posting a day after
joining), and the oldest key (apps/demo/stories.py) came after all of them. What the keys'
requests created keeps its request's time (apps/demo/seeding.py)."""

from datetime import datetime, timedelta

from apps.accounts.models import User
from apps.audit.models import AuditEvent
from apps.communities.models import Community, CommunityMembership, Post
from apps.pages.models import Page
from apps.products.models import Product
from apps.workspaces.models import Membership, Workspace

from .stories import STORIES

DAY = timedelta(days=1)
# Before the oldest key's story: the workspace had a week of its own first.
WORKSPACE_AGE = max(story.created for story in STORIES.values()) + 8 * DAY


def beginning_write(
    workspace: Workspace,
    owner: User,
    admin: User,
    members: list[User],
    *,
    seeded_at: datetime,
    now: datetime,
) -> None:
    """Move what the seeding made at `seeded_at` or later (and not since given a request's
    time), and who joined, back to the workspace's beginning."""
    start = now - WORKSPACE_AGE
    setup = start + DAY
    Workspace.objects.filter(pk=workspace.pk).update(created_at=start)
    _joined(workspace, owner, start)
    _joined(workspace, admin, start + 2 * DAY)
    for model in (Product, Page, Community):
        model.objects.filter(workspace=workspace, created_at__gte=seeded_at).update(
            created_at=setup
        )
    for number, member in enumerate(members):
        joined = start + (3 + 4 * number) * DAY
        _joined(workspace, member, joined)
        CommunityMembership.objects.filter(community__workspace=workspace, user=member).update(
            created_at=joined
        )
        Post.objects.filter(
            community__workspace=workspace, author=member, created_at__gte=seeded_at
        ).update(created_at=joined + DAY)
    # What the seeding audited beside the keys (teammates added, the catalogue made) happened
    # on the first day too; the keys' and service accounts' events carry their stories' times.
    AuditEvent.objects.filter(
        workspace=workspace, key__isnull=True, created_at__gte=seeded_at
    ).exclude(action__startswith="service_account.").update(created_at=setup)


def _joined(workspace: Workspace, user: User, at: datetime) -> None:
    Membership.objects.filter(workspace=workspace, user=user).update(created_at=at)
    User.objects.filter(pk=user.pk).update(date_joined=at)
