"""A person's account events in the audit log of every workspace they belong to (docs/product.md
§14: the sign-in events reach the audit streams): sign-ins and failed ones, password and
second-factor changes, CLI logins denied. The account's own security log keeps them too."""

from apps.accounts.models import AccountEvent
from apps.audit.services import Actor, audit_record

from .audit_actions import ACCOUNT_ACTIONS
from .models import Membership

# Attempts that did not get in: made by whoever held the sign-in form, not by the account.
BY_STRANGER = {AccountEvent.Action.SIGN_IN_FAILED, AccountEvent.Action.SECOND_FACTOR_FAILED}


def account_event_audited(event: AccountEvent) -> None:
    """The account events' listener: one audit event in each of the user's workspaces, in the
    transaction of the account event."""
    user = event.user
    actor = (
        Actor.of_stranger(event.ip)
        if event.action in BY_STRANGER
        else Actor.of_user(user, event.ip)
    )
    data = {"detail": event.detail} if event.detail else None
    for membership in Membership.objects.filter(user=user).select_related("workspace"):
        audit_record(
            workspace=membership.workspace,
            action=ACCOUNT_ACTIONS[event.action],
            actor=actor,
            subject=user.email,
            data=data,
        )
