"""Team → Service accounts: owners make, rename and delete them and make their keys; admins see
them and their keys (docs/product.md §12)."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import DESCRIPTION_MAX_LENGTH
from apps.audit.services import request_actor
from apps.common.dates import ago
from apps.common.quota_periods import Quota, quota_from_text
from apps.common.validation import InvalidInput
from apps.service_accounts.services import (
    UNUSED_ACCOUNT_DAYS,
    service_account_create,
    service_account_delete,
    service_account_update,
    service_accounts_of,
    unused_service_accounts,
)
from apps.service_accounts.shared_quota import shared_quota_uses
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Membership, ServiceAccount

from .keys_in_use import keys_in_use


class ServiceAccountForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        help_text="What it serves, as the team will look for it: “CI deploy”, “Zapier”.",
    )
    description = forms.CharField(
        required=False,
        max_length=DESCRIPTION_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional: who looks after it and where its secrets live.",
    )


class SharedQuotaForm(forms.Form):
    shared_quota = forms.CharField(
        label="One quota for all its keys",
        required=False,
        help_text="Empty: none shared, each key has its own. Requests per period, e.g. "
        "10000/month (day, week, month, or never for a one-off allowance), counted from the "
        "account's creation: every key of it, now and later, draws from this one allowance. "
        "Emptied, each key keeps the same quota as its own.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 10000/month", "autocomplete": "off"}),
    )

    def clean_shared_quota(self) -> Quota | None:
        try:
            return quota_from_text(self.cleaned_data["shared_quota"], "shared_quota")
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None


def _is_owner(request: WorkspaceRequest) -> bool:
    return request.membership.role == Membership.Role.OWNER


def _account(request: WorkspaceRequest, account_id: int) -> ServiceAccount:
    account = service_accounts_of(request.workspace).filter(pk=account_id).first()
    if account is None:
        raise Http404("No such service account in this workspace.")
    return account


def _save(
    request: WorkspaceRequest, form: ServiceAccountForm, account: ServiceAccount | None
) -> ServiceAccount | None:
    """Create or update from a valid form; the account, or None with the error on the form."""
    try:
        if account is None:
            return service_account_create(
                workspace=request.workspace,
                name=form.cleaned_data["name"],
                description=form.cleaned_data["description"],
                actor=request_actor(request),
            )
        return service_account_update(
            account=account, changes=form.cleaned_data, actor=request_actor(request)
        )
    except InvalidInput as error:
        form.add_error("name" if error.field == "name" else None, error.message)
    return None


def _share(request: WorkspaceRequest, form: SharedQuotaForm, account: ServiceAccount) -> bool:
    """Set the quota the account's keys share from a valid form; False with the error on it."""
    quota = form.cleaned_data["shared_quota"]
    try:
        service_account_update(
            account=account,
            changes={"quotaShared": quota.as_json() if quota else None},
            actor=request_actor(request),
        )
    except InvalidInput as error:
        form.add_error("shared_quota", error.message)
        return False
    if quota is None:
        messages.success(request, "Its keys no longer share a quota: each keeps its own.")
    else:
        messages.success(request, f"Every key of {account.name} now draws from {quota}.")
    return True


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
@recent_authentication_required(allow_get=True)
def service_accounts(request: WorkspaceRequest) -> HttpResponse:
    """The list, and (owners) the form that makes one."""
    form = ServiceAccountForm(request.POST or None)
    if request.method == "POST":
        if not _is_owner(request):
            raise PermissionDenied("Only owners make service accounts.")
        if form.is_valid() and (account := _save(request, form, None)) is not None:
            messages.success(
                request, f"Made the service account {account.name}: now give it a key."
            )
            return redirect("team:service_account", account.pk)
    unused_only = request.GET.get("unused") == str(UNUSED_ACCOUNT_DAYS)
    accounts = (
        unused_service_accounts(request.workspace)
        if unused_only
        else service_accounts_of(request.workspace)
    )
    return render(
        request,
        "team/service_accounts.html",
        {
            "accounts": accounts.order_by("name"),
            "unused_only": unused_only,
            "form": form,
            "can_edit": _is_owner(request),
        },
    )


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
@recent_authentication_required(allow_get=True)
def service_account_detail(request: WorkspaceRequest, account_id: int) -> HttpResponse:
    """One account: its keys, who made it; owners rename it and make its keys here."""
    account = _account(request, account_id)
    posted = request.POST if request.method == "POST" else None
    sharing = posted is not None and "shared_quota" in posted
    form = ServiceAccountForm(
        None if sharing else posted,
        initial={"name": account.name, "description": account.description},
    )
    shared = account.shared_quota
    quota_form = SharedQuotaForm(
        posted if sharing else None,
        initial={"shared_quota": f"{shared.requests}/{shared.period}" if shared else ""},
    )
    if request.method == "POST":
        if not _is_owner(request):
            raise PermissionDenied("Only owners change service accounts.")
        if sharing and quota_form.is_valid() and _share(request, quota_form, account):
            return redirect("team:service_account", account.pk)
        if not sharing and form.is_valid() and _save(request, form, account) is not None:
            messages.success(request, "Saved.")
            return redirect("team:service_account", account.pk)
    keys = ApiKey.objects.filter(workspace=request.workspace, user=account.user).select_related(
        "user", "revoked_by"
    )
    return render(
        request,
        "team/service_account.html",
        {
            "account": account,
            "form": form,
            "quota_form": quota_form,
            "shared_use": shared_quota_uses([account]).get(account.pk),
            "keys": keys.current(),
            "old_keys": keys.exclude(pk__in=keys.current().values("pk")).count(),
            "can_edit": _is_owner(request),
            "deletion_warning": deletion_warning(request, account),
            "new_key_url": reverse("key_pages:create") + f"?service_account={account.pk}",
        },
    )


def deletion_warning(request: WorkspaceRequest, account: ServiceAccount) -> str:
    """What deleting `account` stops, naming its keys in use with their requests and last use,
    as the Remove page does for a person (issue 54)."""
    used = keys_in_use(request.workspace, account.user)
    if not used:
        return (
            "Every key of it is revoked at once. None of them made a request in the last 30 "
            "days: nothing stops working that anything still uses."
        )
    named = "; ".join(
        f"{item.key.name} ({item.key.hint}): {item.requests} request"
        f"{'' if item.requests == 1 else 's'} in 30 days, last used {ago(item.key.last_used_at)}"
        for item in used
    )
    return (
        f"Every key of it is revoked at once, and what uses them stops on its next request: "
        f"{named}."
    )


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)
def service_account_delete_page(request: WorkspaceRequest, account_id: int) -> HttpResponse:
    """GET asks for confirmation (the path without JavaScript); POST deletes."""
    account = _account(request, account_id)
    if request.method == "GET":
        return render(
            request,
            "confirm.html",
            {
                "title": f"Delete the service account {account.name}?",
                "message": deletion_warning(request, account),
                "action_label": "Delete service account",
                "cancel_url": reverse("team:service_account", args=[account.pk]),
            },
        )
    revoked = service_account_delete(account=account, actor=request_actor(request))
    messages.success(
        request,
        f"Deleted {account.name}; {revoked} key{'' if revoked == 1 else 's'} revoked.",
    )
    return redirect("team:service_accounts")
