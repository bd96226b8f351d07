"""Sign-up: an account and the workspace it will own (allauth's form, ACCOUNT_FORMS["signup"]).

It lives with workspaces rather than accounts because it creates one: accounts stay below the
tenant core and never name it."""

import time
from collections import deque
from typing import Any

from allauth.account.forms import SignupForm
from allauth.core import context
from django import forms
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.http import HttpRequest

from apps.accounts.forms import PASSWORD_RULES
from apps.common.validation import InvalidInput

from .services import workspace_create
from .validators import clean_workspace_name

# How long the last sign-ups in this process took, of either kind. On a busy machine the work
# of either outlasts SIGN_UP_MIN_SECONDS, so both wait as long as the slowest of these too.
RECENT_SIGN_UP_SECONDS: deque[float] = deque(maxlen=8)


class SignUpForm(SignupForm):
    """Allauth's sign-up plus the name of the workspace the new account will own.

    Someone signing up through an invitation joins the inviting workspace instead, so the
    workspace name is not asked for (see `apps.invitations.views`).
    """

    workspace_name = forms.CharField(max_length=100, label="Workspace name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["email"].label = "E-mail"
        self.fields["email"].widget.attrs.pop("placeholder", None)
        self.fields["password1"].widget.attrs.pop("placeholder", None)
        self.fields["password1"].help_text = PASSWORD_RULES
        # Invitation mode: the visitor came from an invitation link, and goes back to it.
        request = context.request
        self.invited_email = None
        if request is not None:
            next_url = request.POST.get("next") or request.GET.get("next") or ""
            if next_url.startswith("/invitations/"):
                self.invited_email = request.session.get("invitation_email")
        if self.invited_email:
            del self.fields["workspace_name"]
            self.fields["email"].initial = self.invited_email

    def clean_email(self) -> str:
        email = super().clean_email()
        if self.invited_email and email.lower() != self.invited_email.lower():
            raise forms.ValidationError(
                f"This sign-up is for the invitation sent to {self.invited_email}: use that "
                "address, or sign up without the invitation link to create a workspace."
            )
        return email

    def try_save(self, request: HttpRequest) -> Any:
        """Sign up, or (for a taken address) e-mail its owner instead, in the same time.

        A taken address skips the account's creation, so without care it would answer many
        times faster and tell whether an address has an account. It hashes the password as
        a new account would, and both paths answer no sooner than SIGN_UP_MIN_SECONDS, nor
        sooner than the slowest of the last few sign-ups took: under load the work of either
        grows past any fixed floor, and the wait grows with it. A floor of 0 turns the
        waiting off (the tests' own setting).
        """
        started = time.monotonic()
        if self.account_already_exists:
            make_password(self.cleaned_data.get("password1"))  # the work a new account costs
        result = super().try_save(request)
        took = time.monotonic() - started
        if settings.SIGN_UP_MIN_SECONDS <= 0:
            return result
        RECENT_SIGN_UP_SECONDS.append(took)
        if (left := max(settings.SIGN_UP_MIN_SECONDS, *list(RECENT_SIGN_UP_SECONDS)) - took) > 0:
            time.sleep(left)
        return result

    def clean_workspace_name(self) -> str:
        try:
            return clean_workspace_name(self.cleaned_data["workspace_name"], "Workspace name")
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None

    @transaction.atomic
    def custom_signup(self, request: HttpRequest, user: Any) -> None:
        if "workspace_name" in self.cleaned_data:
            workspace_create(name=self.cleaned_data["workspace_name"], owner=user)
