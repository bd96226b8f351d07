"""Single sign-on's pages: find your workspace's provider, go there, come back signed in; and
Settings → Single sign-on, where owners set the provider, test it and choose the mode."""

import secrets
from urllib.parse import urlencode

from allauth.account.internal.flows.login import record_authentication
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput
from apps.scim.pages import provisioning_context
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Membership
from apps.workspaces.selectors import CHOSEN_WORKSPACE_SESSION_KEY, STAFF_ROLES

from .flow import ProviderAnswer, SignInRefused, membership_for, sign_in_finish, sign_in_start
from .gate import MADE_BY_SSO, note_sso_sign_in
from .models import SingleSignOn
from .saml import acs_url, saml_answer, saml_finish, saml_start, sp_entity_id, sp_metadata
from .settings_service import (
    sso_configure,
    sso_configure_saml,
    sso_remove,
    sso_set_mode,
    sso_tested,
)

_NEXT = "sso_next"
_SAML_BROWSER = "sso_saml_browser"  # the secret a SAML sign-in's ticket is bound to


def redirect_uri() -> str:
    """Where the provider sends people back: what an owner registers there."""
    return settings.SITE_URL.rstrip("/") + reverse("sso:callback")


def _refused(request: HttpRequest, message: str, status: int = 403) -> HttpResponse:
    return render(request, "sso/refused.html", {"message": message}, status=status)


@require_http_methods(["GET", "POST"])
def sso_find(request: HttpRequest) -> HttpResponse:
    """The sign-in page's way in: a work address, then its workspace's provider."""
    email = (request.POST.get("email") or "").strip().lower()
    if request.method == "POST" and email:
        places = (
            Membership.objects.filter(
                user__email__iexact=email,
                role__in=STAFF_ROLES,
                workspace__single_sign_on__mode__in=["allowed", "required"],
            )
            .select_related("workspace")
            .order_by("workspace__name")
        )
        # A link to follow, not a redirect: a form's page may not send the browser on to
        # another site (its Content-Security-Policy's form-action), and the person sees where.
        if places:
            return render(request, "sso/find.html", {"email": email, "places": places})
        messages.error(
            request,
            "No workspace signs in through an identity provider with that address: sign in "
            "with your password, or ask an owner of your workspace.",
        )
    return render(request, "sso/find.html", {"email": email})


def sso_start(request: HttpRequest, workspace_id: str) -> HttpResponse:
    """Off to the workspace's provider. `?test=1`: an owner's test sign-in from the settings."""
    sso = SingleSignOn.objects.select_related("workspace").filter(workspace_id=workspace_id).first()
    test = request.GET.get("test") == "1"
    if sso is None or (sso.mode == SingleSignOn.Mode.OFF and not test):
        raise Http404("This workspace does not sign in through an identity provider.")
    if test and not (
        request.user.is_authenticated
        and Membership.objects.filter(
            workspace=sso.workspace, user_id=request.user.pk, role=Membership.Role.OWNER
        ).exists()
    ):
        return _refused(request, "Only an owner of the workspace, signed in, tests its provider.")
    target = request.GET.get("next", "")
    request.session[_NEXT] = target if url_has_allowed_host_and_scheme(target, None) else ""
    try:
        if sso.protocol == SingleSignOn.Protocol.SAML:
            browser = request.session[_SAML_BROWSER] = secrets.token_urlsafe(24)
            return HttpResponseRedirect(saml_start(sso, test=test, browser=browser))
        return sign_in_start(request, sso, redirect_uri(), test=test)
    except SignInRefused as refused:
        return _refused(request, refused.message, status=502)


def sso_callback(request: HttpRequest) -> HttpResponse:
    """Back from an OpenID provider: its answer checked, the teammate it names signed in."""
    try:
        answer = sign_in_finish(request)
    except SignInRefused as refused:
        return _refused(request, refused.message)
    return _signed_in(request, answer)


@csrf_exempt  # the identity provider's own page posts here; the answer is signed instead
@require_http_methods(["POST"])
def saml_acs(request: HttpRequest, workspace_id: str) -> HttpResponse:
    """A SAML provider's answer, checked here; the browser goes on with a one-time ticket."""
    try:
        ticket = saml_answer(workspace_id, request.POST.get("SAMLResponse", ""))
    except SignInRefused as refused:
        return _refused(request, refused.message)
    return HttpResponseRedirect(f"{reverse('sso:saml_finish')}?{urlencode({'ticket': ticket})}")


def saml_finished(request: HttpRequest) -> HttpResponse:
    """The ticket of a checked SAML answer, back with the browser's session."""
    try:
        answer = saml_finish(request.GET.get("ticket", ""), request.session.pop(_SAML_BROWSER, ""))
    except SignInRefused as refused:
        return _refused(request, refused.message)
    return _signed_in(request, answer)


def saml_metadata(request: HttpRequest, workspace_id: str) -> HttpResponse:
    """This workspace as a SAML service provider: what to give the identity provider."""
    if not SingleSignOn.objects.filter(workspace_id=workspace_id).exists():
        raise Http404("This workspace has no single sign-on.")
    return HttpResponse(sp_metadata(workspace_id), content_type="application/samlmetadata+xml")


def _signed_in(request: HttpRequest, answer: ProviderAnswer) -> HttpResponse:
    """The teammate a checked answer names, signed in (or, for a test, linked)."""
    try:
        membership = membership_for(answer)
    except SignInRefused as refused:
        return _refused(request, refused.message)
    workspace = membership.workspace
    if membership.suspended_at is not None:
        return _refused(request, f"{workspace.name}'s identity provider has suspended your access.")
    if answer.test:
        if not request.user.is_authenticated or request.user.pk != membership.user_id:
            return _refused(
                request, "The test sign-in must be yours: sign in to the provider as yourself."
            )
        sso = SingleSignOn.objects.get(workspace=workspace)
        sso_tested(sso=sso, owner=membership.user, actor=request_actor(request))
        note_sso_sign_in(request, str(workspace.pk))
        messages.success(
            request, f"Test sign-in worked: you are linked to the provider as {answer.subject}."
        )
        return redirect("sso:settings")
    if request.user.is_authenticated and request.user.pk != membership.user_id:
        return _refused(
            request,
            f"You are signed in here as {request.user.email}, but the identity provider "
            f"signed in {membership.user.email}. Sign out first.",
        )
    if not request.user.is_authenticated:
        # A provider speaks for its own workspace only: an account that is somewhere else too
        # signs in with its own password first (then the provider is asked for this one).
        if (
            Membership.objects.filter(user_id=membership.user_id)
            .exclude(workspace_id=workspace.pk)
            .exists()
        ):
            return _refused(
                request,
                f"{membership.user.email} is also in other workspaces, so {workspace.name}'s "
                "identity provider cannot sign it in alone: sign in with the account's password "
                f"first, and Gatehouse asks the provider for {workspace.name} then.",
            )
        login(request, membership.user, backend=settings.AUTHENTICATION_BACKENDS[0])
        request.session[MADE_BY_SSO] = str(workspace.pk)
        # Sudo mode counts the provider's sign-in as the person's most recent authentication.
        record_authentication(request, membership.user, "sso", workspace=str(workspace.pk))
    note_sso_sign_in(request, str(workspace.pk))
    request.session[CHOSEN_WORKSPACE_SESSION_KEY] = str(workspace.pk)
    target = request.session.pop(_NEXT, "") or reverse("home")
    return redirect(target)


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)
def sso_settings(request: WorkspaceRequest) -> HttpResponse:
    sso = SingleSignOn.objects.filter(workspace=request.workspace).first()
    errors: dict[str, str] = {}
    action = request.POST.get("action")
    try:
        if action == "provider":
            sso_configure(
                workspace=request.workspace,
                issuer=request.POST.get("issuer", ""),
                client_id=request.POST.get("client_id", ""),
                client_secret=request.POST.get("client_secret", ""),
                actor=request_actor(request),
            )
            messages.success(request, "Provider saved. Test the sign-in before requiring it.")
            return redirect("sso:settings")
        if action == "saml":
            sso_configure_saml(
                workspace=request.workspace,
                metadata=request.POST.get("metadata", ""),
                actor=request_actor(request),
            )
            messages.success(
                request, "Identity provider saved. Test the sign-in before requiring it."
            )
            return redirect("sso:settings")
        if action == "mode" and sso is not None:
            sso_set_mode(sso=sso, mode=request.POST.get("mode", ""), actor=request_actor(request))
            messages.success(request, f"Single sign-on is now {sso.get_mode_display().lower()}.")
            return redirect("sso:settings")
        if action == "remove" and sso is not None:
            sso_remove(sso=sso, actor=request_actor(request))
            messages.success(request, "Single sign-on removed: everyone signs in with passwords.")
            return redirect("sso:settings")
    except InvalidInput as invalid:
        errors[invalid.field] = invalid.message
    return render(
        request,
        "sso/settings.html",
        {
            "sso": sso,
            "redirect_uri": redirect_uri(),
            "saml_entity": sp_entity_id(request.workspace.pk),
            "saml_acs": acs_url(request.workspace.pk),
            "errors": errors,
            "posted": request.POST if errors else {},
            "modes": SingleSignOn.Mode.choices,
            "sso_hours": settings.SSO_SESSION_HOURS,
            **provisioning_context(request.workspace),
        },
        status=400 if errors else 200,
    )
