"""The key pages: create, show once, list and revoke. Two audiences share them: owners and admins
under Integrations → API, MCP and CLI (every key of the workspace), and community members under
Settings → Developer in the portal (their own member keys). `KeyPages` says which is which."""

import secrets
from dataclasses import dataclass

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.audit.models import AuditEvent
from apps.audit.services import request_actor
from apps.common.spreadsheet import csv_lines
from apps.common.validation import InvalidInput, parse_id
from apps.workspaces.decorators import workspace_member_required, workspace_staff_required

from .forms import ApiKeyCreateForm
from .models import ApiKey
from .policy import EXPIRY_DAY_CHOICES
from .refusals import api_key_refusals_last_day
from .selectors import EXPIRING_WITHIN, KINDS, STATES, KeyFilters, holders
from .services import (
    ROLL_GRACE_PERIODS,
    api_key_create,
    api_key_narrow,
    api_key_revoke,
    api_key_roll,
    api_key_update_details,
)
from .snippets import mcp_client_snippets

KEYS_PER_PAGE = 20
INVENTORY_COLUMNS = [
    "name",
    "description",
    "hint",
    "kind",
    "holder",
    "scopes",
    "state",
    "created_at",
    "expires_at",
    "last_used_at",
    "last_used_ip",
    "revoked_at",
    "unused_scopes_30_days",
]
# Tokens of create forms already used, so a reload or a re-sent form never mints a second key.
CONSUMED_FORMS_SESSION_KEY = "api_keys_consumed_forms"


@dataclass(frozen=True)
class KeyPages:
    namespace: str
    member: bool
    list_name: str
    create_name: str
    revoke_name: str
    roll_name: str
    detail_name: str
    export_name: str
    bulk_revoke_name: str
    try_endpoint: str  # the API route a new key is tried on

    def keys(self, request: HttpRequest) -> QuerySet[ApiKey]:
        """Every key these pages may show: looked up through the signed-in user, always."""
        keys = ApiKey.objects.filter(workspace=request.workspace)
        if self.member:
            keys = keys.filter(user=request.user, kind=ApiKey.Kind.MEMBER)
        return keys

    def context(self, request: HttpRequest) -> dict:
        return {
            "member_pages": self.member,
            "list_url": reverse(self.list_name),
            "create_url": reverse(self.create_name),
            "revoke_name": self.revoke_name,
            "roll_name": self.roll_name,
            "detail_name": self.detail_name,
            "export_url": reverse(self.export_name),
            "bulk_revoke_url": reverse(self.bulk_revoke_name),
            "api_url": request.build_absolute_uri(reverse(self.try_endpoint)),
            "openapi_url": request.build_absolute_uri(reverse("api:openapi")),
            "mcp_url": request.build_absolute_uri(reverse("mcp")),
            "server_url": request.build_absolute_uri("/").rstrip("/"),
            "mcp_snippets": mcp_client_snippets(request.build_absolute_uri(reverse("mcp"))),
        }


DASHBOARD = KeyPages(
    "api_keys",
    False,
    "api_keys:list",
    "api_keys:create",
    "api_keys:revoke",
    "api_keys:roll",
    "api_keys:detail",
    "api_keys:export",
    "api_keys:bulk_revoke",
    "api:workspace",
)
PORTAL = KeyPages(
    "portal",
    True,
    "portal:developer",
    "portal:key_create",
    "portal:key_revoke",
    "portal:key_roll",
    "portal:key_detail",
    "portal:key_export",
    "portal:key_bulk_revoke",
    "api:communities",
)
GRACE_CHOICES = [
    ("none", "None: the old secret stops now"),
    ("1h", "1 hour"),
    ("24h", "24 hours"),
    ("7d", "7 days"),
]


def _consume_form_token(request: HttpRequest, token: str) -> bool:
    """Mark a create form as used; False when it was used before."""
    consumed: list[str] = request.session.get(CONSUMED_FORMS_SESSION_KEY, [])
    if token in consumed:
        return False
    request.session[CONSUMED_FORMS_SESSION_KEY] = [*consumed[-49:], token]
    return True


def key_list_page(request: HttpRequest, pages: KeyPages) -> HttpResponse:
    filters = KeyFilters.from_query(request.GET)
    all_keys = pages.keys(request)
    keys = filters.apply(all_keys.select_related("user", "revoked_by"))
    page = Paginator(keys, KEYS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "api_keys/key_list.html",
        {
            **pages.context(request),
            "page": page,
            "filters": filters,
            "filter_query": filters.as_query(),
            "states": STATES,
            "kinds": KINDS,
            "holders": [] if pages.member else holders(all_keys),
            "has_keys": all_keys.exists(),
            "expiring_within": EXPIRING_WITHIN,
        },
    )


def key_export_page(request: HttpRequest, pages: KeyPages) -> StreamingHttpResponse:
    """The filtered inventory as CSV: everything on the list, never a secret or a hash."""
    filters = KeyFilters.from_query(request.GET)
    keys = filters.apply(pages.keys(request).select_related("user"))
    now = timezone.now()

    def rows():
        yield INVENTORY_COLUMNS
        for key in keys.iterator(chunk_size=500):
            yield [
                key.name,
                key.description,
                key.hint,
                "cli" if key.is_cli else key.kind,
                key.user.email,
                " ".join(key.scopes),
                key.state_at(now),
                key.created_at.isoformat(),
                key.expires_at.isoformat() if key.expires_at else "",
                key.last_used_at.isoformat() if key.last_used_at else "",
                key.last_used_ip or "",
                key.revoked_at.isoformat() if key.revoked_at else "",
                " ".join(key.unused_scopes_at(now)) if key.state_at(now) == "active" else "",
            ]

    response = StreamingHttpResponse(csv_lines(rows()), content_type="text/csv; charset=utf-8")
    stamp = now.strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="gatehouse-keys-{stamp}.csv"'
    return response


def key_bulk_revoke_page(request: HttpRequest, pages: KeyPages) -> HttpResponse:
    """Revoke several keys in one confirmed step: the list's selection is shown for confirmation,
    then revoked. Keys outside the user's reach, or no longer active, are left out."""
    ids = [key_id for raw in request.POST.getlist("keys") if (key_id := parse_id(raw))]
    keys = list(pages.keys(request).in_state("active").filter(pk__in=ids).select_related("user"))
    if not keys:
        messages.info(request, "Select at least one active key to revoke.")
        return redirect(pages.list_name)
    if request.POST.get("confirm") != "yes":
        return render(
            request, "api_keys/key_bulk_revoke.html", {**pages.context(request), "keys": keys}
        )
    actor = request_actor(request)
    for key in keys:
        api_key_revoke(key=key, actor=actor)
    messages.success(
        request,
        f"Revoked {len(keys)} key{pluralize(len(keys))}. "
        f"{pluralize(len(keys), 'It no longer works,They no longer work')} on the API.",
    )
    return redirect(pages.list_name)


def key_create_page(request: HttpRequest, pages: KeyPages) -> HttpResponse:
    workspace = request.workspace
    form_options = {
        "tz_name": workspace.timezone,
        "member": pages.member,
        "max_days": workspace.key_max_lifetime_days,
        "allow_no_expiry": workspace.key_allow_no_expiry,
    }
    if request.method == "POST" and request.POST.get("preset"):
        # "Read everything" / "Full access" without JavaScript: fill in, create nothing yet.
        form = ApiKeyCreateForm(request.POST, **form_options)
        form.apply_preset(request.POST["preset"])
        return render(
            request,
            "api_keys/key_create.html",
            {**pages.context(request), "form": form, "hide_errors": True},
        )
    if request.method == "POST":
        form = ApiKeyCreateForm(request.POST, **form_options)
        if form.is_valid():
            if not _consume_form_token(request, form.cleaned_data["form_token"]):
                messages.info(
                    request, "That key was already created; its secret is shown only once."
                )
                return redirect(pages.list_name)
            try:
                created = api_key_create(
                    workspace=request.workspace,
                    user=request.user,
                    name=form.cleaned_data["name"],
                    description=form.cleaned_data["description"],
                    scopes=form.cleaned_data["scopes"],
                    expires_at=form.expires_at(),
                    kind=ApiKey.Kind.MEMBER if pages.member else ApiKey.Kind.WORKSPACE,
                    actor=request_actor(request),
                )
            except InvalidInput as error:
                form.add_error(None, error.message)
            else:
                # The secret lives only in this response: never in the session, messages or cache.
                response = render(
                    request,
                    "api_keys/key_created.html",
                    {**pages.context(request), "key": created.key, "secret": created.secret},
                )
                add_never_cache_headers(response)
                return response
    else:
        offered = [days for days in EXPIRY_DAY_CHOICES if days <= workspace.key_max_lifetime_days]
        initial = {
            "expiry": str(offered[-1]) if offered else "custom",
            "form_token": secrets.token_urlsafe(16),
        }
        template = parse_id(request.GET.get("from", ""))
        source = pages.keys(request).filter(pk=template).first() if template else None
        if source is not None:  # "re-create": the same name, description and permissions
            initial.update(
                name=source.name, description=source.description, scopes=list(source.scopes)
            )
        form = ApiKeyCreateForm(initial=initial, **form_options)
    return render(request, "api_keys/key_create.html", {**pages.context(request), "form": form})


def key_revoke_page(request: HttpRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """GET asks for confirmation (the path without JavaScript); POST revokes."""
    # Another workspace's key, or another member's, is a 404 like a missing one.
    key = get_object_or_404(pages.keys(request).select_related("user", "revoked_by"), pk=key_id)
    context = {**pages.context(request), "key": key}
    if request.method == "GET":
        return render(request, "api_keys/key_revoke_confirm.html", context)
    already_revoked = key.revoked_at is not None
    api_key_revoke(key=key, actor=request_actor(request))
    if request.htmx:
        return render(request, "api_keys/_key_row.html", {**context, "just_revoked": True})
    if already_revoked:
        messages.info(request, f"“{key.name}” was already revoked.")
    else:
        messages.success(request, f"Revoked “{key.name}”. It no longer works on the API.")
    return redirect(pages.list_name)


KEY_HISTORY_LIMIT = 100


def key_detail_page(request: HttpRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """A key's own page: everything known about it, its history, rename, describe and narrow."""
    key = get_object_or_404(pages.keys(request).select_related("user", "revoked_by"), pk=key_id)
    details_error = narrow_error = None
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "details":
                api_key_update_details(
                    key=key,
                    name=request.POST.get("name", ""),
                    description=request.POST.get("description", ""),
                    actor=request_actor(request),
                )
                messages.success(request, "Saved the key's name and description.")
            elif action in ("narrow", "narrow_to_used"):
                if action == "narrow_to_used":
                    scopes = [s for s in key.scopes if s not in key.unused_scopes]
                else:
                    scopes = request.POST.getlist("scopes")
                api_key_narrow(key=key, scopes=scopes, actor=request_actor(request))
                messages.success(request, "Narrowed the key's permissions.")
            else:
                return HttpResponse("Unknown action.", status=400)
        except InvalidInput as error:
            if action == "details":
                details_error = error.message
            else:
                narrow_error = error.message
        else:
            return redirect(pages.detail_name, key_id=key.pk)
    history = AuditEvent.objects.filter(workspace=request.workspace, key=key)[:KEY_HISTORY_LIMIT]
    context = {
        **pages.context(request),
        "key": key,
        "history": history,
        "details_error": details_error,
        "narrow_error": narrow_error,
        "unused_scopes": key.unused_scopes,
        "refusals": api_key_refusals_last_day(key.pk),
        "used_scopes": [s for s in key.scopes if s not in key.unused_scopes],
    }
    status = 400 if details_error or narrow_error else 200
    return render(request, "api_keys/key_detail.html", context, status=status)


def key_roll_page(request: HttpRequest, pages: KeyPages, key_id: int) -> HttpResponse:
    """GET: choose how long the old secret keeps working. POST: roll, show the new secret once.

    Only the holder's own keys: an owner or admin never receives a teammate's secret.
    """
    own_keys = pages.keys(request).filter(user=request.user)
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
                    "api_keys/key_created.html",
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
        request, "api_keys/key_roll.html", context, status=400 if "error" in context else 200
    )


@require_http_methods(["GET"])
@workspace_staff_required()
def key_list(request: HttpRequest) -> HttpResponse:
    return key_list_page(request, DASHBOARD)


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
@recent_authentication_required
def key_create(request: HttpRequest) -> HttpResponse:
    return key_create_page(request, DASHBOARD)


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    return key_revoke_page(request, DASHBOARD, key_id)


@require_http_methods(["GET"])
@workspace_staff_required()
def key_export(request: HttpRequest) -> StreamingHttpResponse:
    return key_export_page(request, DASHBOARD)


@require_http_methods(["POST"])
@workspace_staff_required()
def key_bulk_revoke(request: HttpRequest) -> HttpResponse:
    return key_bulk_revoke_page(request, DASHBOARD)


@require_http_methods(["GET"])
@workspace_member_required
def member_key_export(request: HttpRequest) -> StreamingHttpResponse:
    return key_export_page(request, PORTAL)


@require_http_methods(["POST"])
@workspace_member_required
def member_key_bulk_revoke(request: HttpRequest) -> HttpResponse:
    return key_bulk_revoke_page(request, PORTAL)


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def key_detail(request: HttpRequest, key_id: int) -> HttpResponse:
    return key_detail_page(request, DASHBOARD, key_id)


@require_http_methods(["GET", "POST"])
@workspace_member_required
def member_key_detail(request: HttpRequest, key_id: int) -> HttpResponse:
    return key_detail_page(request, PORTAL, key_id)


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
@recent_authentication_required
def key_roll(request: HttpRequest, key_id: int) -> HttpResponse:
    return key_roll_page(request, DASHBOARD, key_id)


@require_http_methods(["GET", "POST"])
@workspace_member_required
@recent_authentication_required
def member_key_roll(request: HttpRequest, key_id: int) -> HttpResponse:
    return key_roll_page(request, PORTAL, key_id)


@require_http_methods(["GET"])
@workspace_member_required
def member_key_list(request: HttpRequest) -> HttpResponse:
    return key_list_page(request, PORTAL)


@require_http_methods(["GET", "POST"])
@workspace_member_required
@recent_authentication_required
def member_key_create(request: HttpRequest) -> HttpResponse:
    return key_create_page(request, PORTAL)


@require_http_methods(["GET", "POST"])
@workspace_member_required
def member_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    return key_revoke_page(request, PORTAL, key_id)
