"""The Key health page's checks (docs/product.md §13): each a count of keys (or service
accounts) that need a look, and the filtered list where they can be acted on. Every key count
is the inventory's own filter applied to the same keys, so the number is the list's."""

from dataclasses import dataclass

from django.urls import reverse
from django.utils import timezone

from apps.key_pages.pages import DASHBOARD
from apps.key_pages.selectors import KeyFilters
from apps.service_accounts.services import UNUSED_ACCOUNT_DAYS, unused_service_accounts
from apps.workspaces.decorators import WorkspaceRequest


@dataclass(frozen=True)
class HealthCheck:
    """One tile: how many, what it means, where to act."""

    slug: str
    count: int
    title: str
    why: str
    url: str
    action: str


KEY_CHECKS = (
    (
        "idle-90",
        {"idle": 90},
        "Idle 90+ days",
        "Active keys nothing has used for three months: likely forgotten, still able to act.",
        "Revoke the ones nobody needs",
    ),
    (
        "idle-30",
        {"idle": 30},
        "Idle 30+ days",
        "Active keys unused for a month (since creation, if never used).",
        "Review and revoke",
    ),
    (
        "write-unrestricted",
        {"write_unrestricted": True},
        "Can write, unrestricted",
        "Keys with a write permission, limited to no object and no network.",
        "Narrow them",
    ),
    (
        "unused-scopes",
        {"unused": True},
        "Permissions unused 30 days",
        "Keys holding permissions they have not exercised for 30 days.",
        "Narrow to what they use",
    ),
    (
        "no-expiry",
        {"no_expiry": True},
        "Never expire",
        "Keys without an expiry: they work until someone revokes them.",
        "Replace with expiring keys",
    ),
    (
        "expiring",
        {"expiring": True},
        "Expiring within 7 days",
        "Integrations that stop when these expire unless their keys are replaced.",
        "Re-create before they stop",
    ),
    (
        "quota-high",
        {"quota_high": True},
        "Past 80 % of their quota",
        "Keys that have used most of their quota this period: refused with 429 once it is "
        "spent, until it refills.",
        "Top up or raise their quotas",
    ),
    (
        "pending",
        {"state": "pending"},
        "Waiting for approval",
        "Keys that answer 401 pending-key until an owner approves or denies them.",
        "Decide",
    ),
)


def health_checks(request: WorkspaceRequest) -> list[HealthCheck]:
    """Every check, counted now over the keys the dashboard's list shows."""
    now = timezone.now()
    keys = DASHBOARD.keys(request)
    list_url = reverse("key_pages:list")
    checks = []
    for slug, values, title, why, action in KEY_CHECKS:
        filters = KeyFilters(**values)
        checks.append(
            HealthCheck(
                slug=slug,
                count=filters.apply(keys, now).count(),
                title=title,
                why=why,
                url=f"{list_url}?{filters.as_query()}",
                action=action,
            )
        )
    if request.workspace.key_idle_days:
        filters = KeyFilters(idle_warned=True)
        checks.insert(
            0,
            HealthCheck(
                slug="idle-warned",
                count=filters.apply(keys, now).count(),
                title="Revoked soon as idle",
                why=f"Keys unused for {request.workspace.key_idle_days - 7}+ days, warned: the "
                f"key policy revokes them at {request.workspace.key_idle_days} days unless "
                "they are used before.",
                url=f"{list_url}?{filters.as_query()}",
                action="Revoke now what nothing needs",
            ),
        )
    checks.append(
        HealthCheck(
            slug="unused-service-accounts",
            count=unused_service_accounts(request.workspace, now).count(),
            title="Service accounts unused 30 days",
            why="Service accounts none of whose keys made a request in 30 days.",
            url=reverse("team:service_accounts") + f"?unused={UNUSED_ACCOUNT_DAYS}",
            action="Delete the ones nothing uses",
        )
    )
    return checks
