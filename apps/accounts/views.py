from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_http_methods

from apps.common.validation import InvalidInput
from apps.workspaces.selectors import dashboard_membership, portal_membership
from apps.workspaces.services import account_sign_up

from .forms import SignInForm, SignUpForm


@require_http_methods(["GET"])
def home(request: HttpRequest) -> HttpResponse:
    """Where `/` leads: the dashboard for owners and admins, otherwise sign-in."""
    if not request.user.is_authenticated:
        return redirect("accounts:sign_in")
    if dashboard_membership(request.user) is not None:
        return redirect("api_keys:list")
    if portal_membership(request.user) is not None:
        return redirect("portal:home")
    return render(request, "accounts/no_workspace.html", status=403)


@require_http_methods(["GET", "POST"])
def sign_up(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user, workspace = account_sign_up(
                email=form.cleaned_data["email"],
                password=form.cleaned_data["password"],
                workspace_name=form.cleaned_data["workspace_name"],
            )
        except InvalidInput as error:
            form.add_error(None, error.message)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome to Gatehouse. {workspace.name} is ready.")
            return redirect("api_keys:list")
    return render(request, "accounts/sign_up.html", {"form": form})


class SetPasswordView(auth_views.PasswordResetConfirmView):
    """The link a new community member gets by e-mail: choose a password, then sign in."""

    template_name = "accounts/set_password.html"
    success_url = reverse_lazy("accounts:sign_in")

    def form_valid(self, form):
        messages.success(self.request, "Your password is set. Sign in to continue.")
        return super().form_valid(form)


class SignInView(auth_views.LoginView):
    template_name = "accounts/sign_in.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True


class SignOutView(auth_views.LogoutView):
    next_page = reverse_lazy("accounts:sign_in")


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "accounts/password_change.html"
    success_url = reverse_lazy("home")

    def form_valid(self, form):
        messages.success(self.request, "Your password was changed.")
        return super().form_valid(form)
