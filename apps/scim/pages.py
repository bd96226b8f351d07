"""SCIM provisioning's part of Settings → Single sign-on (owners): what the provider needs to
provision the team (the base URL and a token, shown once), the tokens with their last use, and
the provider's last requests with what each did. The section is shown by apps.sso's page; the
token forms post here."""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Workspace

from .models import ScimRequest, ScimToken
from .tokens import (
    scim_token_create,
    scim_token_in,
    scim_token_revoke,
    scim_token_roll,
    scim_tokens_of,
)

SHOWN_REQUESTS = 20


def scim_base_url() -> str:
    """The address a provider is given: SCIM's base, without a trailing slash."""
    return settings.SITE_URL.rstrip("/") + "/scim/v2"


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)  # a token provisions and suspends the team
def identity_provider(request: WorkspaceRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        try:
            made = scim_token_create(
                workspace=request.workspace,
                name=request.POST.get("name", ""),
                actor=request_actor(request),
            )
        except InvalidInput as invalid:
            error = invalid.message
        else:
            response = render(
                request,
                "scim/token_created.html",
                {"token": made.token, "secret": made.secret, "base_url": scim_base_url()},
            )
            response["Cache-Control"] = "no-store"
            return response
    if not error:  # the page the section lives on
        return redirect("sso:settings")
    return render(
        request,
        "scim/identity_provider.html",
        {
            **provisioning_context(request.workspace),
            "error": error,
            "name": request.POST.get("name", ""),
        },
        status=400,
    )


def provisioning_context(workspace: Workspace) -> dict[str, Any]:
    """What Settings → Single sign-on shows of SCIM: the base URL, the working tokens, and the
    provider's last requests with their outcome."""
    return {
        "base_url": scim_base_url(),
        "tokens": scim_tokens_of(workspace).select_related("created_by"),
        "requests": ScimRequest.objects.filter(workspace=workspace).select_related("token")[
            :SHOWN_REQUESTS
        ],
    }


def _token(request: WorkspaceRequest, token_id: int) -> ScimToken:
    token = scim_token_in(request.workspace, token_id)
    if token is None:
        raise Http404("No working SCIM token with this id in this workspace.")
    return token


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)
def token_revoke(request: WorkspaceRequest, token_id: int) -> HttpResponse:
    """GET asks for confirmation (the path without JavaScript); POST revokes."""
    token = _token(request, token_id)
    if request.method == "GET":
        return render(
            request,
            "confirm.html",
            {
                "title": f"Revoke the SCIM token “{token.name}”?",
                "message": "Your identity provider's next request with it is refused, so "
                "nobody it adds, suspends or removes reaches Gatehouse until you give it a "
                "new token.",
                "action_label": "Revoke token",
                "cancel_url": reverse("sso:settings"),
            },
        )
    scim_token_revoke(token=token, actor=request_actor(request))
    messages.success(request, f"SCIM token “{token.name}” ({token.hint}) revoked.")
    return redirect("sso:settings")


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required
def token_roll(request: WorkspaceRequest, token_id: int) -> HttpResponse:
    """A new secret for the token, shown once; the old one stops at once."""
    try:
        made = scim_token_roll(token=_token(request, token_id), actor=request_actor(request))
    except InvalidInput as invalid:
        messages.error(request, invalid.message)
        return redirect("sso:settings")
    response = render(
        request,
        "scim/token_created.html",
        {"token": made.token, "secret": made.secret, "base_url": scim_base_url(), "rolled": True},
    )
    response["Cache-Control"] = "no-store"
    return response
