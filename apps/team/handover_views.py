"""Before a person leaves (or loses the owner role): the keys of theirs in use, each of which an
owner may hand over to a service account, then the removal or demotion itself
(docs/product.md §12)."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.api_keys.models import ApiKey
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput, parse_id
from apps.key_pages.pages import DASHBOARD
from apps.service_accounts.handover import HANDOVER_GRACE_PERIODS, key_hand_over
from apps.service_accounts.services import service_accounts_of
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Membership
from apps.workspaces.selectors import STAFF_ROLES
from apps.workspaces.services import team_remove

from .keys_in_use import keys_in_use

# Nothing is preselected (docs/product.md §12): each choice says what it costs.
GRACE_CHOICES = [
    ("none", "None: the old secret stops now, and the integration fails until it has the new"),
    ("1h", "1 hour: time to paste the new secret where the integration reads it"),
    ("24h", "24 hours: for an integration someone else deploys"),
]


def _teammate(request: WorkspaceRequest, membership_id: int) -> Membership:
    return get_object_or_404(
        Membership.objects.select_related("user", "workspace"),
        pk=membership_id,
        workspace=request.workspace,
        role__in=STAFF_ROLES,
        user__is_service_account=False,
    )


def leaving_page(
    request: WorkspaceRequest, membership: Membership, *, demote: bool
) -> HttpResponse:
    """The keys of `membership`'s person in use, the hand-over forms, and the final step."""
    return render(
        request,
        "team/remove.html",
        {
            "mate": membership,
            "demote": demote,
            "in_use": keys_in_use(request.workspace, membership.user),
            # Working keys and keys waiting for approval, counted apart: a waiting key works
            # nowhere, and "2 working keys" beside one listed read as a miscount (issue 54).
            "working_keys": ApiKey.objects.in_state("active")
            .filter(workspace=request.workspace, user=membership.user)
            .count(),
            "waiting_keys": ApiKey.objects.in_state("pending")
            .filter(workspace=request.workspace, user=membership.user)
            .count(),
            "service_accounts": list(service_accounts_of(request.workspace)),
            "grace_choices": GRACE_CHOICES,
        },
    )


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)
def team_member_remove(request: WorkspaceRequest, membership_id: int) -> HttpResponse:
    """GET: what would break, and the hand-overs; POST: remove (their other keys revoked)."""
    membership = _teammate(request, membership_id)
    if request.method == "GET":
        return leaving_page(request, membership, demote=request.GET.get("demote") == "1")
    try:
        team_remove(membership=membership, actor=request_actor(request))
    except InvalidInput as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Removed {membership.user.email}; their keys are revoked.")
    return redirect("team:list")


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required
def team_member_hand_over(request: WorkspaceRequest, membership_id: int) -> HttpResponse:
    """Hand one of the person's keys over to a service account; the new secret, once."""
    membership = _teammate(request, membership_id)
    back = reverse("team:remove", args=[membership.pk])
    if request.POST.get("demote") == "1":
        back += "?demote=1"
    key = ApiKey.objects.filter(
        workspace=request.workspace,
        user=membership.user,
        pk=parse_id(request.POST.get("key", "")) or 0,
    ).first()
    account = (
        service_accounts_of(request.workspace)
        .filter(pk=parse_id(request.POST.get("service_account", "")) or 0)
        .first()
    )
    grace = HANDOVER_GRACE_PERIODS.get(request.POST.get("grace", ""))
    if key is None or account is None or grace is None:
        messages.error(request, "Choose one of their keys, a service account and a grace period.")
        return redirect(back)
    try:
        created = key_hand_over(key=key, account=account, grace=grace, actor=request_actor(request))
    except InvalidInput as error:
        messages.error(request, error.message)
        return redirect(back)
    response = render(
        request,
        "key_pages/key_created.html",
        {
            **DASHBOARD.context(request),
            "key": created.key,
            "secret": created.secret,
            "handed_over": key,
            # Where the job stands: their keys still in use, then the step that ends it.
            "left_working": len(keys_in_use(request.workspace, membership.user)),
            "leaving": membership.user.email,
            "demote": request.POST.get("demote") == "1",
            "back_url": back,
        },
    )
    add_never_cache_headers(response)
    return response
