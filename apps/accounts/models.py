from typing import Any, ClassVar

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.http import HttpRequest
from django.utils import timezone


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **fields: Any) -> "User":
        """A user made by an operator (a command, the demo, `createsuperuser`): the operator
        vouches for the address, so it counts as verified. People who sign up themselves go
        through allauth, which verifies the address by e-mail."""
        from allauth.account.models import EmailAddress

        if not email:
            raise ValueError("An e-mail address is required.")
        user = self.model(email=self.normalize_email(email).lower(), **fields)
        user.set_password(password)  # None gives an unusable password
        user.save(using=self._db)
        EmailAddress.objects.using(self._db).create(
            user=user, email=user.email, primary=True, verified=True
        )
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields: Any) -> "User":
        fields.setdefault("is_staff", True)
        fields.setdefault("is_superuser", True)
        return self.create_user(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who signs in by e-mail: an owner or admin of a workspace, or a community member;
    or a service account, which holds keys and never signs in."""

    email = models.EmailField(unique=True)
    full_name = models.CharField(max_length=150, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)
    # A service account (docs/product.md §12): a holder of keys with no password and no sign-in
    # of any kind; apps/workspaces.ServiceAccount says which workspace and what it is for.
    is_service_account = models.BooleanField(default=False)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    def __str__(self) -> str:
        return self.email


class AccountEvent(models.Model):
    """Something that happened to an account, for its own security log (as GitHub's): sign-ins,
    failed ones, password and second-factor changes, CLI logins denied. Workspace events are
    in the workspace's audit log instead."""

    class Action(models.TextChoices):
        SIGNED_IN = "signed_in", "Signed in"
        SIGN_IN_FAILED = "sign_in_failed", "Failed sign-in"
        SECOND_FACTOR_FAILED = "second_factor_failed", "Wrong second factor"
        PASSWORD_CHANGED = "password_changed", "Password changed"
        PASSWORD_RESET = "password_reset", "Password reset by e-mail"
        SECOND_FACTOR_ADDED = "second_factor_added", "Second factor added"
        SECOND_FACTOR_REMOVED = "second_factor_removed", "Second factor removed"
        CLI_LOGIN_DENIED = "cli_login_denied", "CLI login denied"

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="account_events")
    action = models.CharField(max_length=32, choices=Action.choices)
    created_at = models.DateTimeField(default=timezone.now)
    ip = models.GenericIPAddressField(null=True, blank=True)
    detail = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="account_event_user_created")]

    def __str__(self) -> str:
        return f"{self.get_action_display()} for {self.user} at {self.created_at:%Y-%m-%d %H:%M}"


class SignedInRequest(HttpRequest):
    """A request that passed `login_required`: for the type checker, its user is a User."""

    user: User
