"""Writing the audit log. Every service that changes something calls `audit_record` inside its
own transaction, so a change and its event are committed together or not at all."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction

from apps.common.http import client_ip

from .models import AuditEvent

if TYPE_CHECKING:
    from django.http import HttpRequest

    from apps.accounts.models import User
    from apps.api_keys.models import ApiKey
    from apps.workspaces.models import Workspace


# How an identity provider's changes are labelled in the log, and known again by readers.
IDENTITY_PROVIDER = "identity provider"


@dataclass(frozen=True)
class Actor:
    """Who did something: a signed-in user, an API key, or an operator at the command line."""

    user: "User | None" = None
    key: "ApiKey | None" = None
    ip: str | None = None
    operator: str = ""
    stranger: bool = False  # someone not signed in: a failed sign-in's, known by address only
    # The workspace's identity provider, through a SCIM token (its name) (docs/product.md §16).
    identity_provider: str = ""

    @classmethod
    def of_user(cls, user: "User", ip: str | None = None) -> "Actor":
        return cls(user=user, ip=ip)

    @classmethod
    def of_key(cls, key: "ApiKey", ip: str | None = None) -> "Actor":
        return cls(key=key, user=key.user, ip=ip)

    @classmethod
    def of_operator(cls, command: str) -> "Actor":
        return cls(operator=command)

    @classmethod
    def of_stranger(cls, ip: str | None) -> "Actor":
        return cls(ip=ip, stranger=True)

    @classmethod
    def of_identity_provider(cls, token_name: str, ip: str | None = None) -> "Actor":
        return cls(identity_provider=token_name, ip=ip)

    @property
    def label(self) -> str:
        if self.key is not None:
            holder = self.key.user
            # A service account's address (svc-…@service.gatehouse.invalid) says nothing.
            of = (
                f"service account {holder.full_name}" if holder.is_service_account else holder.email
            )
            return f"key {self.key.name} ({self.key.hint}) of {of}"
        if self.user is not None:
            if self.user.is_service_account:
                return f"service account {self.user.full_name}"
            return self.user.email
        if self.stranger:
            return "someone not signed in"
        if self.identity_provider:
            return f"{IDENTITY_PROVIDER} (SCIM token {self.identity_provider})"
        return f"operator ({self.operator})" if self.operator else "operator"


def request_actor(request: "HttpRequest") -> Actor:
    """The audit actor of a dashboard request: its signed-in user, from its address. (API and
    MCP calls make theirs from the key, `Actor.of_key`.)"""
    return Actor.of_user(request.user, client_ip(request))  # type: ignore[arg-type]


def audit_record(
    *,
    workspace: "Workspace",
    action: str,
    actor: Actor,
    key: "ApiKey | None" = None,
    subject: str = "",
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append an event. Must run inside the transaction of the change it records."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of its change")
    event = AuditEvent.objects.create(
        workspace=workspace,
        action=action,
        actor_user=actor.user if actor.key is None else None,
        actor_key=actor.key,
        actor_label=actor.label[:254],
        ip=actor.ip,
        key=key,
        subject=subject[:254],
        data=data or {},
    )
    for listener in _listeners:
        listener(event)
    return event


AuditListener = Callable[[AuditEvent], None]
_listeners: list[AuditListener] = []


def audit_listen(listener: AuditListener) -> None:
    """Call `listener(event)` for every event recorded, inside the transaction of its change
    (the webhooks app enqueues its deliveries so: no event without its change)."""
    if listener not in _listeners:
        _listeners.append(listener)
