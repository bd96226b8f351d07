from collections.abc import Callable
from functools import wraps
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.utils import timezone
from django_htmx.middleware import HtmxDetails

from apps.accounts.models import SignedInRequest

from .gates import workspace_gate_refusal
from .holders import two_factor_missing
from .models import Membership, Workspace
from .selectors import STAFF_ROLES, current_membership


class WorkspaceRequest(SignedInRequest):
    """A request that passed `workspace_staff_required` or `workspace_member_required`: the
    signed-in user, their place in the chosen workspace, and that workspace."""

    membership: Membership
    workspace: Workspace
    htmx: HtmxDetails


def _two_factor_missing(request: HttpRequest, membership: Membership) -> HttpResponse | None:
    """The way to the two-factor set-up when the workspace requires it and the user has none."""
    if not two_factor_missing(request.user, membership.workspace):
        return None
    messages.warning(
        request,
        f"{membership.workspace.name} requires two-factor authentication: "
        "add an authenticator app or a passkey to continue.",
    )
    return redirect("mfa_index")


def _suspended_everywhere(request: HttpRequest) -> HttpResponse | None:
    """The sign-in page, signed out, for someone whose every place the identity provider
    suspended (docs/product.md §16); None for anyone else."""
    suspended = (
        Membership.objects.filter(user_id=request.user.pk or 0, suspended_at__isnull=False)
        .select_related("workspace")
        .first()
    )
    if suspended is None:
        return None
    logout(request)
    messages.error(
        request,
        f"{suspended.workspace.name}'s identity provider has suspended your access. "
        "Ask one of its owners if this is a mistake.",
    )
    return redirect(settings.LOGIN_URL)


def _in_workspace(
    request: HttpRequest,
    membership: Membership,
    view: Callable[..., HttpResponseBase],
    *args: Any,
    **kwargs: Any,
) -> HttpResponseBase:
    """Run the view for `membership`'s workspace, every time shown in its time zone."""
    request.membership = membership  # type: ignore[attr-defined]
    request.workspace = membership.workspace  # type: ignore[attr-defined]
    try:
        zone = ZoneInfo(membership.workspace.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    with timezone.override(zone):
        return view(request, *args, **kwargs)


def workspace_staff_required(
    *, owner_only: bool = False
) -> Callable[[Callable[..., HttpResponseBase]], Callable[..., HttpResponseBase]]:
    """Sign-in required, then an owner or admin role in the chosen workspace (an owner with
    `owner_only`), and a second factor when that workspace requires one.

    Sets `request.membership` and `request.workspace` for the view; anyone else gets 403.
    """

    def decorator(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            membership = current_membership(request)
            if membership is None and (closed := _suspended_everywhere(request)) is not None:
                return closed
            if membership is None or membership.role not in STAFF_ROLES:
                raise PermissionDenied(
                    f"In {membership.workspace.name} you are a community member: your keys "
                    "are under Your API keys."
                    if membership
                    else "You are not an owner or admin of a workspace."
                )
            if owner_only and membership.role != Membership.Role.OWNER:
                raise PermissionDenied("Only owners of the workspace can do this.")
            if (refusal := _two_factor_missing(request, membership)) is not None:
                return refusal
            if (closed_here := workspace_gate_refusal(request, membership)) is not None:
                return closed_here
            return _in_workspace(request, membership, view, *args, **kwargs)

        return wrapper

    return decorator


def workspace_member_required(
    view: Callable[..., HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    """Sign-in required, then a community member's place in the chosen workspace (the member
    portal), and a second factor when that workspace requires one.

    Sets `request.membership` and `request.workspace`; anyone else gets 403.
    """

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        membership = current_membership(request)
        if membership is None or membership.role != Membership.Role.MEMBER:
            raise PermissionDenied("The member portal is for community members.")
        if (refusal := _two_factor_missing(request, membership)) is not None:
            return refusal
        return _in_workspace(request, membership, view, *args, **kwargs)

    return wrapper
