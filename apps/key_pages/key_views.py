"""One key's pages: its own page (facts, use, history), rename and describe, narrow, roll and
revoke. Each page function serves both audiences (`pages.KeyPages`)."""

from typing import Any

from django.contrib import messages
from django.db.models import Q
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from apps.api_keys.audit_actions import KEY_LEAKED
from apps.api_keys.choosable import chosen_names
from apps.api_keys.models import ApiKey, ApiKeyState
from apps.api_keys.narrowing import api_key_narrow
from apps.api_keys.restrictions import NOUNS
from apps.api_keys.rolling import ROLL_GRACE_PERIODS, api_key_roll
from apps.api_keys.services import api_key_revoke, api_key_update_details
from apps.approvals.services import approval_decider_problem
from apps.audit.models import AuditEvent
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput
from apps.idle_keys.notices import attach_idle_notices
from apps.key_operations.handed_over import KEY_HANDED_OVER_ACTION, handed_over_to
from apps.metering.refusals import refusals_last_day
from apps.quotas.uses import attach_quota_uses
from apps.workspaces.decorators import WorkspaceRequest
from apps.workspaces.models import Membership

from .pages import KeyPages, for_both_audiences
from .restriction_forms import RestrictionInputs

KEY_HISTORY_LIMIT = 100
GRACE_CHOICES = [
    ("none", "None: the old secret stops now"),
    ("1h", "1 hour"),
    ("24h", "24 hours"),
    ("7d", "7 days"),
]


def _key_or_404(request: WorkspaceRequest, pages: KeyPages, key_id: int) -> ApiKey:
    """Another workspace's key, or another member's, is a 404 like a missing one."""
    return get_object_or_404(
        pages.keys(request).select_related("user", "revoked_by", "approved_by", "denied_by"),
        pk=key_id,
    )


def _key_page(
    request: WorkspaceRequest, pages: KeyPages, key: ApiKey, *, status: int = 200, **errors: str
) -> HttpResponse:
    handed_over = Q(action=KEY_HANDED_OVER_ACTION, data__fromKey__id=key.pk)
    history = AuditEvent.objects.filter(Q(key=key) | handed_over, workspace=request.workspace)[
        :KEY_HISTORY_LIMIT
    ]
    unused = key.unused_scopes
    names = chosen_names(key)
    unused_objects = {
        group: [name for object_id, name in names.get(group, []) if object_id in ids]
        for group, ids in key.unused_objects.items()
    }
    attach_quota_uses([key])
    attach_idle_notices([key])
    context = {
        **pages.context(request),
        "key": key,
        "handover": handed_over_to(key),
        "history": history,
        "unused_scopes": unused,
        "used_scopes": [s for s in key.scopes if s not in unused],
        "reach": [
            (f"{len(objects)} {group if len(objects) != 1 else NOUNS[group]}", objects)
            for group, objects in names.items()
        ],
        "unused_objects": {group: found for group, found in unused_objects.items() if found},
        "restrictions": _narrow_inputs(request, pages, key, None),
        "refusals": refusals_last_day(key.pk),
        # A leak report revoked it: the page says so first, where and when it was found.
        "leak": AuditEvent.objects.filter(workspace=request.workspace, key=key, action=KEY_LEAKED)
        .order_by("created_at")
        .first(),
        # Owners decide on a waiting key here too, unless it is their own.
        "can_decide": key.state == ApiKeyState.PENDING
        and not pages.member
        and approval_decider_problem(request.user, key) is None,
        **errors,
    }
    if errors.get("narrow_error") and request.method == "POST":
        context["restrictions"] = _narrow_inputs(request, pages, key, request.POST)
    return render(request, "key_pages/key_detail.html", context, status=status)


def key_detail_page(request: WorkspaceRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """A key's own page: everything known about it, its history, and forms to change it."""
    return _key_page(request, pages, _key_or_404(request, pages, key_id))


def key_details_page(request: WorkspaceRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """POST: rename a key or change its description."""
    key = _key_or_404(request, pages, key_id)
    try:
        api_key_update_details(
            key=key,
            name=request.POST.get("name", ""),
            description=request.POST.get("description", ""),
            actor=request_actor(request),
        )
    except InvalidInput as error:
        return _key_page(request, pages, key, status=400, details_error=error.message)
    messages.success(request, "Saved the key's name and description.")
    return redirect(pages.url_name("detail"), key_id=key.pk)


def _narrow_inputs(
    request: WorkspaceRequest, pages: KeyPages, key: ApiKey, data: QueryDict | None
) -> RestrictionInputs:
    return RestrictionInputs(
        data,
        workspace_id=key.workspace_id,
        member_id=key.user_id if key.kind == ApiKey.Kind.MEMBER else None,
        current=key.restrictions,
        narrowing=True,
    )


def key_narrow_page(request: WorkspaceRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """POST: keep only the ticked permissions and tighten the restrictions, or (`used_only`)
    keep only the permissions and chosen objects used in 30 days."""
    key = _key_or_404(request, pages, key_id)
    changes: dict[str, Any] | None
    if request.POST.get("used_only"):
        scopes = [s for s in key.scopes if s not in key.unused_scopes]
        changes = {
            group: tuple(i for i in key.chosen(group) or () if i not in unused)
            for group, unused in key.unused_objects.items()
        }
    else:
        scopes = request.POST.getlist("scopes")
        inputs = _narrow_inputs(request, pages, key, request.POST)
        chosen = inputs.clean()
        if chosen is None:
            return _key_page(request, pages, key, status=400, narrow_error=inputs.error or "")
        changes = chosen.as_changes()
    try:
        api_key_narrow(key=key, scopes=scopes, restrictions=changes, actor=request_actor(request))
    except InvalidInput as error:
        return _key_page(request, pages, key, status=400, narrow_error=error.message)
    messages.success(request, "Narrowed the key.")
    return redirect(pages.url_name("detail"), key_id=key.pk)


def key_revoke_page(request: WorkspaceRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """GET asks for confirmation (the path without JavaScript); POST revokes."""
    key = _key_or_404(request, pages, key_id)
    key_page = reverse(pages.url_name("detail"), args=[key.pk])
    back_to_key = key_page if request.GET.get("next") == key_page else ""
    context = {**pages.context(request), "key": key, "back_to_key": back_to_key}
    if request.method == "GET":
        return render(request, "key_pages/key_revoke_confirm.html", context)
    already_revoked = key.revoked_at is not None
    api_key_revoke(key=key, actor=request_actor(request))
    if request.htmx:
        return render(request, "key_pages/_key_row.html", {**context, "just_revoked": True})
    if already_revoked:
        messages.info(request, f"“{key.name}” was already revoked.")
    else:
        messages.success(request, f"Revoked “{key.name}”. It no longer works on the API.")
    if request.POST.get("next") == key_page:  # revoked from its own page: stay there
        return redirect(key_page)
    return redirect(pages.url_name("list"))


def _is_owner(request: WorkspaceRequest) -> bool:
    return request.membership.role == Membership.Role.OWNER


def key_roll_page(request: WorkspaceRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """GET: choose how long the old secret keeps working. POST: roll, show the new secret once.

    Only the holder's own keys: an owner or admin never receives a teammate's secret. Owners
    roll service accounts' keys too (docs/product.md §12): those are the workspace's.
    """
    own_keys = pages.keys(request).filter(
        Q(user=request.user) | Q(user__is_service_account=True)
        if _is_owner(request)
        else Q(user=request.user)
    )
    key = get_object_or_404(own_keys.select_related("user"), pk=key_id)
    context = {**pages.context(request), "key": key, "grace_choices": GRACE_CHOICES}
    if request.method == "POST":
        grace = ROLL_GRACE_PERIODS.get(request.POST.get("grace", ""))
        if grace is None:
            context["error"] = "Choose how long the old secret keeps working."
        else:
            try:
                rolled = api_key_roll(key=key, grace=grace, actor=request_actor(request))
            except InvalidInput as error:
                context["error"] = error.message
            else:
                response = render(
                    request,
                    "key_pages/key_created.html",
                    {
                        **pages.context(request),
                        "key": rolled.key,
                        "secret": rolled.secret,
                        "rolled": True,
                    },
                )
                add_never_cache_headers(response)
                return response
    return render(
        request, "key_pages/key_roll.html", context, status=400 if "error" in context else 200
    )


key_detail, member_key_detail = for_both_audiences(key_detail_page, ["GET"])
key_details, member_key_details = for_both_audiences(key_details_page, ["POST"])
key_narrow, member_key_narrow = for_both_audiences(key_narrow_page, ["POST"])
key_revoke, member_key_revoke = for_both_audiences(key_revoke_page, ["GET", "POST"])
key_roll, member_key_roll = for_both_audiences(key_roll_page, ["GET", "POST"], sudo=True)
