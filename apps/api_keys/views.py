"""Integrations → API, MCP and CLI: create, list and revoke the workspace's keys."""

import secrets

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods

from apps.common.validation import InvalidInput
from apps.workspaces.decorators import workspace_staff_required
from apps.workspaces.models import Workspace

from .forms import ApiKeyCreateForm
from .models import ApiKey, ApiKeyState
from .services import api_key_create, api_key_revoke

KEYS_PER_PAGE = 20
STATE_FILTERS = ("all", *ApiKeyState.values)
# Tokens of create forms already used, so a reload or a re-sent form never mints a second key.
CONSUMED_FORMS_SESSION_KEY = "api_keys_consumed_forms"


def get_workspace_key_or_404(workspace: Workspace, key_id: int) -> ApiKey:
    """A key of this workspace; another workspace's key id is a 404 like a missing one."""
    return get_object_or_404(
        ApiKey.objects.select_related("user", "revoked_by"), pk=key_id, workspace=workspace
    )


def _consume_form_token(request: HttpRequest, token: str) -> bool:
    """Mark a create form as used; False when it was used before."""
    consumed: list[str] = request.session.get(CONSUMED_FORMS_SESSION_KEY, [])
    if token in consumed:
        return False
    request.session[CONSUMED_FORMS_SESSION_KEY] = [*consumed[-49:], token]
    return True


@require_http_methods(["GET"])
@workspace_staff_required()
def key_list(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state", "all")
    if state not in STATE_FILTERS:
        state = "all"
    keys = ApiKey.objects.filter(workspace=request.workspace).select_related("user")
    if state != "all":
        keys = keys.in_state(state)
    page = Paginator(keys, KEYS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "api_keys/key_list.html",
        {
            "page": page,
            "state": state,
            "state_filters": STATE_FILTERS,
            "workspace_has_keys": ApiKey.objects.filter(workspace=request.workspace).exists(),
            "api_url": request.build_absolute_uri(reverse("api:workspace")),
            "openapi_url": request.build_absolute_uri(reverse("api:openapi")),
        },
    )


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def key_create(request: HttpRequest) -> HttpResponse:
    tz_name = request.workspace.timezone
    if request.method == "POST":
        form = ApiKeyCreateForm(request.POST, tz_name=tz_name)
        if form.is_valid():
            if not _consume_form_token(request, form.cleaned_data["form_token"]):
                messages.info(request, "That key was already created; its secret is shown only once.")
                return redirect("api_keys:list")
            try:
                created = api_key_create(
                    workspace=request.workspace,
                    user=request.user,
                    name=form.cleaned_data["name"],
                    scopes=form.cleaned_data["scopes"],
                    expires_at=form.expires_at(),
                )
            except InvalidInput as error:
                form.add_error(None, error.message)
            else:
                # The secret lives only in this response: never in the session, messages or cache.
                response = render(
                    request,
                    "api_keys/key_created.html",
                    {
                        "key": created.key,
                        "secret": created.secret,
                        "api_url": request.build_absolute_uri(reverse("api:workspace")),
                    },
                )
                add_never_cache_headers(response)
                return response
    else:
        form = ApiKeyCreateForm(
            initial={"expiry": "365", "form_token": secrets.token_urlsafe(16)}, tz_name=tz_name
        )
    return render(request, "api_keys/key_create.html", {"form": form})


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    """GET asks for confirmation (the path without JavaScript); POST revokes."""
    key = get_workspace_key_or_404(request.workspace, key_id)
    if request.method == "GET":
        return render(request, "api_keys/key_revoke_confirm.html", {"key": key})
    already_revoked = key.revoked_at is not None
    api_key_revoke(key=key, actor=request.user)
    if request.htmx:
        return render(request, "api_keys/_key_row.html", {"key": key, "just_revoked": True})
    if already_revoked:
        messages.info(request, f"“{key.name}” was already revoked.")
    else:
        messages.success(request, f"Revoked “{key.name}”. It no longer works on the API.")
    return redirect("api_keys:list")
