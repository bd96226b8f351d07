from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm

from apps.common.validation import InvalidInput
from apps.workspaces.validators import clean_workspace_name

from .models import User
from .services import clean_email


class SignUpForm(forms.Form):
    email = forms.EmailField(
        label="E-mail", widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )
    password = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    workspace_name = forms.CharField(max_length=100, label="Workspace name")

    def clean_email(self) -> str:
        try:
            email = clean_email(self.cleaned_data["email"])
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None
        if User.objects.filter(email=email).exists():
            raise forms.ValidationError("An account with this e-mail address already exists.")
        return email

    def clean_workspace_name(self) -> str:
        try:
            return clean_workspace_name(self.cleaned_data["workspace_name"], "Workspace name")
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None

    def clean(self) -> dict:
        data = super().clean()
        if data.get("password") and data.get("email"):
            try:
                password_validation.validate_password(data["password"], User(email=data["email"]))
            except forms.ValidationError as error:
                self.add_error("password", error)
        return data


class SignInForm(AuthenticationForm):
    username = forms.EmailField(
        label="E-mail", widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"})
    )
    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "That e-mail and password do not match an account.",
    }

    def clean_username(self) -> str:
        return self.cleaned_data["username"].strip().lower()
