"""Who may see which workspace: every dashboard lookup goes through the signed-in user."""

from apps.accounts.models import User

from .models import Membership

STAFF_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)


def dashboard_membership(user: User) -> Membership | None:
    """The membership whose workspace the dashboard shows: the user's oldest as owner or admin."""
    if not user.is_authenticated:
        return None
    return (
        Membership.objects.select_related("workspace")
        .filter(user=user, role__in=STAFF_ROLES)
        .order_by("created_at", "id")
        .first()
    )


def portal_membership(user: User) -> Membership | None:
    """The membership whose workspace the member portal shows: the user's oldest as a member."""
    if not user.is_authenticated:
        return None
    return (
        Membership.objects.select_related("workspace")
        .filter(user=user, role=Membership.Role.MEMBER)
        .order_by("created_at", "id")
        .first()
    )
