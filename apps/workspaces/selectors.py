"""Who may see which workspace: every dashboard lookup goes through the signed-in user and the
workspace they chose in the header."""

import uuid

from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import HttpRequest

from apps.accounts.models import SignedInRequest, User

from .models import Membership, Workspace

STAFF_ROLES = (Membership.Role.OWNER, Membership.Role.ADMIN)
CHOSEN_WORKSPACE_SESSION_KEY = "workspace_id"


def workspace_for_operator(raw: str) -> "Workspace":
    """The workspace an operator named by id; ValueError saying what is wrong otherwise."""
    try:
        workspace_id = uuid.UUID(raw)
    except ValueError:
        raise ValueError(f"--workspace {raw!r} is not a workspace id.") from None
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        raise ValueError(f"No workspace has the id {raw}.")
    return workspace


def user_memberships(user: User) -> QuerySet[Membership]:
    """Every place the user has and may open, staff places first, then the oldest first."""
    return (
        Membership.objects.select_related("workspace")
        # A place the identity provider suspended is closed until restored (§16).
        .filter(user=user, suspended_at__isnull=True)
        .annotate(
            is_member=Case(
                When(role=Membership.Role.MEMBER, then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            )
        )
        .order_by("is_member", "created_at", "id")
    )


def current_membership(request: HttpRequest) -> Membership | None:
    """The membership of the workspace the user chose, or their first place when they chose
    none or have left the chosen one. Cached on the request."""
    if hasattr(request, "_current_membership"):
        return request._current_membership
    membership = None
    places = request_places(request)
    if places:
        chosen = str(request.session.get(CHOSEN_WORKSPACE_SESSION_KEY) or "")
        membership = next((m for m in places if str(m.workspace_id) == chosen), places[0])
    request._current_membership = membership  # type: ignore[attr-defined]
    return membership


def request_places(request: HttpRequest) -> list[Membership]:
    """The signed-in user's memberships, as `user_memberships` orders them, read once a request
    (the workspace a page is in and the navigation's list of places both come from it)."""
    if not hasattr(request, "_places"):
        user = request.user
        places = list(user_memberships(user)) if user.is_authenticated else []
        request._places = places  # type: ignore[attr-defined]
    return request._places  # type: ignore[attr-defined]


def choose_workspace(request: SignedInRequest, workspace_id: object) -> Membership | None:
    """Make `workspace_id` the workspace every page shows, if the user still belongs to it."""
    try:
        workspace_id = uuid.UUID(str(workspace_id))
    except ValueError:
        return None
    membership = user_memberships(request.user).filter(workspace_id=workspace_id).first()
    if membership is not None:
        request.session[CHOSEN_WORKSPACE_SESSION_KEY] = str(membership.workspace_id)
        request._current_membership = membership  # type: ignore[attr-defined]
    return membership
