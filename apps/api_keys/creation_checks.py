"""What a new key is checked for before it is made: its expiry under its tag and the
workspace's key policy, and whether its holder may hold what it asks for."""

from datetime import datetime

from apps.accounts.models import User
from apps.api.scopes import KEY_SCOPES
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership, Workspace

from .choosable import check_chosen_exist
from .models import ApiKey
from .policy import CLI_LIFETIME, MCP_LIFETIME, clean_expires_at, key_policy_problem
from .restrictions import Restrictions

# Who may hold the keys scopes and manage keys over the API: who manages them in the dashboard.
KEY_MANAGER_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)


def clean_new_expiry(
    workspace: Workspace, expires_at: datetime | None, *, tag: str, now: datetime
) -> datetime | None:
    """The expiry a new key gets: exactly 90 days for a CLI key and an hour for an MCP key,
    else the one asked for, within 365 days and the workspace's key policy."""
    fixed = {"cli": (CLI_LIFETIME, "90 days"), "mcp": (MCP_LIFETIME, "an hour")}.get(str(tag))
    if fixed is not None:
        if expires_at is not None:
            raise InvalidInput("expires_at", f"{tag.upper()} keys always expire after {fixed[1]}.")
        expires_at = now + fixed[0]
    expires_at = clean_expires_at(expires_at, now=now)
    if problem := key_policy_problem(workspace, expires_at, now=now):
        raise InvalidInput("expires_at", problem)
    return expires_at


def check_grants(
    workspace: Workspace, user: User, kind: str, scopes: list[str], restrictions: Restrictions
) -> None:
    """InvalidInput unless `user` may hold the keys scopes asked for (owners and admins only)
    and every chosen object is one the key could reach."""
    if (
        set(scopes) & set(KEY_SCOPES)
        and not Membership.objects.filter(
            workspace=workspace, user=user, role__in=KEY_MANAGER_ROLES
        ).exists()
    ):
        raise InvalidInput(
            "scopes", "Only workspace owners and admins can hold keys:read or keys:write."
        )
    check_chosen_exist(
        restrictions,
        workspace_id=workspace.pk,
        member_id=user.pk if kind == ApiKey.Kind.MEMBER else None,
    )
