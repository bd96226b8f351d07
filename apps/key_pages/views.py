"""The key list and what acts on many keys or makes a new one: create (the secret shown once),
revoking a selection. One function per page serves both audiences (`pages.KeyPages`); a key's
own pages are in `key_views.py`, the CSV inventory in `export.py`."""

import secrets
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers

from apps.api_keys.models import ApiKey, ApiKeyQuerySet
from apps.api_keys.policy import EXPIRY_DAY_CHOICES, create_approval_note
from apps.api_keys.services import KEY_MANAGER_ROLES, api_key_create, api_key_revoke
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput, parse_id
from apps.common.wording import pluralize
from apps.idle_keys.notices import attach_idle_notices
from apps.quotas.uses import attach_quota_uses
from apps.workspaces.decorators import WorkspaceRequest

from .forms import ApiKeyCreateForm
from .pages import KeyPages, for_both_audiences
from .restriction_forms import RestrictionInputs
from .selectors import (
    DEFAULT_STATE,
    EXPIRING_WITHIN,
    IDLE_CHOICES,
    KINDS,
    STATE_LABELS,
    KeyFilters,
    holders,
)
from .service_holders import service_account_for_new_key

KEYS_PER_PAGE = 20
# Tokens of create forms already used, so a reload or a re-sent form never mints a second key.
CONSUMED_FORMS_SESSION_KEY = "api_keys_consumed_forms"


def _consume_form_token(request: WorkspaceRequest, token: str) -> bool:
    """Mark a create form as used; False when it was used before."""
    consumed: list[str] = request.session.get(CONSUMED_FORMS_SESSION_KEY, [])
    if token in consumed:
        return False
    request.session[CONSUMED_FORMS_SESSION_KEY] = [*consumed[-49:], token]
    return True


def _hidden_by_state(keys: ApiKeyQuerySet, filters: KeyFilters) -> int:
    """How many keys the other filters would show that the default state hides."""
    if filters.state != DEFAULT_STATE:
        return 0
    return (
        KeyFilters(**{**filters.__dict__, "state": "all"})
        .apply(keys)
        .exclude(pk__in=filters.apply(keys).values("pk"))
        .count()
    )


def key_list_page(request: WorkspaceRequest, pages: KeyPages) -> HttpResponse:
    filters = KeyFilters.from_query(request.GET)
    # The whole inventory: keys people made, CLI keys and connected apps' keys (tag MCP, each
    # linking to its app under Connected apps).
    all_keys = pages.keys(request)
    # The workspace too: each row asks whether its key is outside the workspace's key policy.
    keys = filters.apply(all_keys.select_related("user", "revoked_by", "workspace"))
    page = Paginator(keys, KEYS_PER_PAGE).get_page(request.GET.get("page"))
    attach_quota_uses(page.object_list)
    attach_idle_notices(page.object_list)
    return render(
        request,
        "key_pages/key_list.html",
        {
            **pages.context(request),
            "page": page,
            "filters": filters,
            "filter_query": filters.as_query(),
            "all_states_query": filters.as_query(state="all"),
            "inactive_count": _hidden_by_state(all_keys, filters),
            "states": STATE_LABELS,
            "kinds": KINDS,
            "holders": [] if pages.member else holders(all_keys),
            "has_keys": all_keys.exists(),
            "expiring_within": EXPIRING_WITHIN,
            "idle_choices": IDLE_CHOICES,
        },
    )


def key_bulk_revoke_page(request: WorkspaceRequest, pages: KeyPages) -> HttpResponse:
    """Revoke several keys in one confirmed step: the list's selection is shown for confirmation,
    then revoked. Keys outside the user's reach, or no longer active, are left out."""
    ids = [key_id for raw in request.POST.getlist("keys") if (key_id := parse_id(raw))]
    keys = list(pages.keys(request).current().filter(pk__in=ids).select_related("user"))
    if not keys:
        messages.info(request, "Select at least one active key to revoke.")
        return redirect(pages.url_name("list"))
    if request.POST.get("confirm") != "yes":
        return render(
            request, "key_pages/key_bulk_revoke.html", {**pages.context(request), "keys": keys}
        )
    actor = request_actor(request)
    for key in keys:
        api_key_revoke(key=key, actor=actor)
    messages.success(
        request,
        f"Revoked {len(keys)} key{pluralize(len(keys))}. "
        f"{pluralize(len(keys), 'It no longer works,They no longer work')} on the API.",
    )
    return redirect(pages.url_name("list"))


def _create_form_initial(request: WorkspaceRequest, pages: KeyPages) -> dict[str, Any]:
    """A new form: the longest expiry the policy offers, and with `?from=<key id>` ("re-create")
    the name, description and permissions of that key."""
    workspace = request.workspace
    offered = [days for days in EXPIRY_DAY_CHOICES if days <= workspace.key_max_lifetime_days]
    initial: dict[str, Any] = {
        "expiry": str(offered[-1]) if offered else "custom",
        "form_token": secrets.token_urlsafe(16),
    }
    template = parse_id(request.GET.get("from", ""))
    source = pages.keys(request).filter(pk=template).first() if template else None
    if source is not None:
        initial.update(name=source.name, description=source.description, scopes=list(source.scopes))
    return initial


def key_create_page(request: WorkspaceRequest, pages: KeyPages) -> HttpResponse:
    workspace = request.workspace
    account = service_account_for_new_key(request, pages)
    form_options: dict[str, Any] = {
        "tz_name": workspace.timezone,
        "member": pages.member,
        "max_days": workspace.key_max_lifetime_days,
        "allow_no_expiry": workspace.key_allow_no_expiry,
        "key_manager": not pages.member and request.membership.role in KEY_MANAGER_ROLES,
    }
    restrictions = RestrictionInputs(
        request.POST if request.method == "POST" else None,
        workspace_id=workspace.pk,
        member_id=request.user.pk if pages.member else None,
    )
    page = {
        **pages.context(request),
        "restrictions": restrictions,
        "approval_note": None
        if account
        else create_approval_note(workspace.key_approval, request.membership.role),
        "service_account": account,
    }
    if request.method == "POST" and request.POST.get("preset"):
        # The shortcuts without JavaScript: fill in, create nothing yet.
        form = ApiKeyCreateForm(request.POST, **form_options)
        form.apply_preset(request.POST["preset"])
        return render(
            request,
            "key_pages/key_create.html",
            {**page, "form": form, "hide_errors": True, "restrictions_set": restrictions.any_set},
        )
    if request.method == "POST":
        form = ApiKeyCreateForm(request.POST, **form_options)
        chosen = restrictions.clean()
        if form.is_valid() and chosen is not None:
            if not _consume_form_token(request, form.cleaned_data["form_token"]):
                messages.info(
                    request, "That key was already created; its secret is shown only once."
                )
                return redirect(pages.url_name("list"))
            try:
                created = api_key_create(
                    workspace=request.workspace,
                    user=account.user if account else request.user,
                    owner_made=account is not None,
                    name=form.cleaned_data["name"],
                    description=form.cleaned_data["description"],
                    scopes=form.cleaned_data["scopes"],
                    expires_at=form.expires_at(),
                    kind=ApiKey.Kind.MEMBER if pages.member else ApiKey.Kind.WORKSPACE,
                    actor=request_actor(request),
                    restrictions=chosen,
                    quota=form.quota(),
                )
            except InvalidInput as error:
                form.add_error(None, error.message)
            else:
                # The secret lives only in this response: never in the session, messages or cache.
                response = render(
                    request,
                    "key_pages/key_created.html",
                    {**pages.context(request), "key": created.key, "secret": created.secret},
                )
                add_never_cache_headers(response)
                return response
    else:
        form = ApiKeyCreateForm(initial=_create_form_initial(request, pages), **form_options)
    page["restrictions_set"] = restrictions.any_set
    return render(request, "key_pages/key_create.html", {**page, "form": form})


key_list, member_key_list = for_both_audiences(key_list_page, ["GET"])
key_create, member_key_create = for_both_audiences(key_create_page, ["GET", "POST"], sudo=True)
key_bulk_revoke, member_key_bulk_revoke = for_both_audiences(key_bulk_revoke_page, ["POST"])
