from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from .models import Membership
from .selectors import dashboard_membership, portal_membership


def workspace_staff_required(
    *, owner_only: bool = False
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Sign-in required, then an owner or admin role in a workspace (an owner with `owner_only`).

    Sets `request.membership` and `request.workspace` for the view; anyone else gets 403.
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            membership = dashboard_membership(request.user)
            if membership is None:
                raise PermissionDenied("You are not an owner or admin of a workspace.")
            if owner_only and membership.role != Membership.Role.OWNER:
                raise PermissionDenied("Only owners of the workspace can do this.")
            request.membership = membership  # type: ignore[attr-defined]
            request.workspace = membership.workspace  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def workspace_member_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Sign-in required, then a community member's place in a workspace (the member portal).

    Sets `request.membership` and `request.workspace`; anyone else gets 403.
    """

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        membership = portal_membership(request.user)
        if membership is None:
            raise PermissionDenied("The member portal is for community members.")
        request.membership = membership  # type: ignore[attr-defined]
        request.workspace = membership.workspace  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapper
