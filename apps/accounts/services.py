"""Writes on user accounts."""

from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

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
    """A new user; `password=None` leaves them without a usable password (invited users)."""
    email = clean_email(email)
    if User.objects.filter(email=email).exists():
        raise InvalidInput("email", f"A user with the e-mail address {email} already exists.")
    if password is not None:
        try:
            validate_password(password, User(email=email))
        except ValidationError as error:
            raise InvalidInput("password", " ".join(error.messages)) from None
    return User.objects.create_user(email=email, password=password)


def set_password_link(user: User, base_url: str) -> str:
    """A one-time link for a new member to choose their password (Django's reset tokens)."""
    path = reverse(
        "accounts:set_password",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
        },
    )
    return base_url.rstrip("/") + path


def user_get_or_invite(email: str) -> tuple[User, bool]:
    """The user with this (already cleaned) e-mail, created without a password when new."""
    user = User.objects.filter(email=email).first()
    if user is not None:
        return user, False
    return User.objects.create_user(email=email, password=None), True


def invitation_send_on_commit(user: User, *, subject: str, intro: str, base_url: str) -> None:
    """E-mail a new user a link to choose their password, once the transaction commits."""
    link = set_password_link(user, base_url)
    body = f"{intro}\n\nChoose your password to sign in:\n{link}\n"
    transaction.on_commit(lambda: send_mail(subject, body, None, [user.email]))
