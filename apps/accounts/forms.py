from typing import Any

from allauth.account.forms import LoginForm

PASSWORD_RULES = (
    "At least 8 characters, not a common password, not only digits, and not like your e-mail."
)


class SignInForm(LoginForm):
    """Allauth's sign-in, labelled as the rest of the dashboard."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "E-mail"
        self.fields["login"].widget.attrs.pop("placeholder", None)
        self.fields["password"].widget.attrs.pop("placeholder", None)
        if "remember" in self.fields:
            del self.fields["remember"]
