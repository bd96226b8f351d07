"""Writes on user accounts."""

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from apps.common.validation import InvalidInput

from .models import User


def clean_email(value: str, field: str = "email") -> str:
    email = (value or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise InvalidInput(field, f"{value!r} is not a valid e-mail address.") from None
    return email


def user_create(*, email: str, password: str | None) -> User:
    """A user made by an operator command; `password=None` leaves no usable password."""
    email = clean_email(email)
    if User.objects.filter(email=email).exists():
        raise InvalidInput("email", f"A user with the e-mail address {email} already exists.")
    if password is not None:
        try:
            validate_password(password, User(email=email))
        except ValidationError as error:
            raise InvalidInput("password", " ".join(error.messages)) from None
    return User.objects.create_user(email=email, password=password)
