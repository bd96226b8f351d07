"""Owners decide on waiting keys (docs/product.md §10): the "Waiting for approval" list, and
one POST that approves or denies one key or several, under sudo mode."""

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.api_keys.models import ApiKey
from apps.approvals.services import (
    REASON_MAX_LENGTH,
    Decision,
    NotWaiting,
    api_key_decide,
    approval_decider_problem,
    clean_reason,
    waiting_count,
    waiting_keys,
)
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput, parse_id
from apps.workspaces.choices import KeyApproval
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Membership

from .pages import DASHBOARD


def approvals_nav(membership: Membership) -> list[dict[str, Any]]:
    """An owner's navigation item for the waiting list, with its count: shown while the
    policy is on or any key still waits."""
    waiting = waiting_count(membership.workspace)
    if not waiting and membership.workspace.key_approval == KeyApproval.OFF:
        return []
    return [
        {
            "label": "Approvals",
            "url": reverse("key_pages:waiting"),
            "count": waiting,
            "count_label": f"{waiting} waiting for your approval",
        }
    ]


@require_http_methods(["GET"])
@workspace_staff_required(owner_only=True)
def key_waiting(request: WorkspaceRequest) -> HttpResponse:
    """The keys that wait for an owner, oldest first; the signed-in owner's own are shown but
    left to another owner."""
    keys = waiting_keys(request.workspace)
    return render(
        request,
        "key_pages/key_waiting.html",
        {
            **DASHBOARD.context(request),
            "keys": keys,
            "decidable": [key for key in keys if key.user_id != request.user.pk],
            "reason_max_length": REASON_MAX_LENGTH,
            "policy": request.workspace.get_key_approval_display(),
            "policy_off": request.workspace.key_approval == "off",
        },
    )


def _back(request: WorkspaceRequest) -> str:
    """Where to return: a key's page when the decision was made there, else the list."""
    key_id = parse_id(request.POST.get("from_key", ""))
    if key_id is not None:
        return reverse("key_pages:detail", args=[key_id])
    return reverse("key_pages:waiting")


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required
def key_decide(request: WorkspaceRequest) -> HttpResponse:
    """Approve or deny the keys chosen (one from a row or a key's page, several at once)."""
    decision = request.POST.get("decision")
    ids = [key_id for value in request.POST.getlist("keys") if (key_id := parse_id(value))]
    if decision not in ("approve", "deny") or not ids:
        messages.error(request, "Choose at least one key, then Approve or Deny.")
        return redirect(_back(request))
    try:
        reason = clean_reason(request.POST.get("reason", "")) if decision == "deny" else ""
    except InvalidInput as error:
        messages.error(request, f"Nothing was decided: {error.message}")
        return redirect(_back(request))
    keys = ApiKey.objects.filter(workspace=request.workspace, pk__in=ids).select_related(
        "user", "workspace"
    )
    decided, skipped = [], []
    for key in keys.order_by("approval_requested_at", "id"):
        problem = approval_decider_problem(request.user, key)
        if problem:
            skipped.append(f"“{key.name}”: {problem}")
            continue
        try:
            api_key_decide(
                key=key,
                decision=Decision(approve=decision == "approve", reason=reason),
                actor=request_actor(request),
            )
        except NotWaiting as not_waiting:
            skipped.append(f"“{key.name}”: {not_waiting}")
            continue
        decided.append(f"“{key.name}”")
    names = ", ".join(decided)
    if decided and decision == "approve":
        works = "it works" if len(decided) == 1 else "they work"
        messages.success(request, f"Approved {names}: {works} from the next request on.")
    elif decided:
        told = "Its holder is" if len(decided) == 1 else "Each holder is"
        messages.success(request, f"Denied {names}. {told} told by e-mail.")
    for line in skipped:
        messages.warning(request, f"Not decided: {line}")
    return redirect(_back(request))
