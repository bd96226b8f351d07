"""Who may hold a key in a workspace: one rule for every path that mints or approves a key (the
dashboard, the portal, the API, the operator command, the CLI login, an app's Connect) and for
the pages that offer those paths. `apps.api_keys.policy.key_holder_problem` applies it inside
the minting transaction."""

from allauth.mfa.utils import is_mfa_enabled
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser

from apps.accounts.models import User

from .models import Membership, Workspace
from .selectors import STAFF_ROLES


def two_factor_missing(user: AbstractBaseUser | AnonymousUser, workspace: Workspace) -> bool:
    """Whether `workspace` requires a second factor that `user` has not set up."""
    return workspace.require_two_factor and not is_mfa_enabled(user)


def place_problem(
    user: User, workspace: Workspace, membership: Membership | None, *, staff: bool
) -> str | None:
    """Why `user`, whose place in `workspace` is `membership`, may not hold a key there (of
    owners and admins when `staff`, else of any place), or None: an active account, a place in
    the workspace, the role the key needs, and a second factor where the workspace requires it.
    """
    if not user.is_active:
        return "This account is disabled."
    if membership is None:
        return f"This account is not in {workspace.name}."
    if membership.suspended_at is not None:
        return f"{workspace.name}'s identity provider has suspended this account there."
    if staff and membership.role not in STAFF_ROLES:
        return f"Only owners and admins of {workspace.name} can hold its workspace keys."
    # A service account has no sign-in, so no second factor to add: its keys are made by owners.
    if two_factor_missing(user, workspace) and not user.is_service_account:
        return (
            f"{workspace.name} requires two-factor authentication: add an authenticator app "
            "or a passkey first."
        )
    return None
