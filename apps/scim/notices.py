"""The e-mails SCIM's changes send: the owners hear of a suspension with the keys it paused
that were in use, and a person the provider added hears how to sign in. Enqueued in the
transaction of the change, so a change rolled back sends nothing."""

from datetime import timedelta

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.common.dates import moment_text
from apps.common.tasks import send_email
from apps.workspaces.models import Membership, owner_emails

# Keys used this recently are the ones an integration may stand on: the owners are shown them.
IN_USE_WITHIN = timedelta(days=30)


def keys_in_use(membership: Membership) -> list[ApiKey]:
    """The suspended person's paused keys that made a request in the last 30 days."""
    since = timezone.now() - IN_USE_WITHIN
    return list(
        ApiKey.objects.filter(
            workspace_id=membership.workspace_id,
            user_id=membership.user_id,
            suspended_at__isnull=False,
            revoked_at__isnull=True,
            last_used_at__gte=since,
        ).order_by("-last_used_at")
    )


def tell_owners_of_suspension(membership: Membership) -> None:
    """E-mail the workspace's owners (not the suspended person) that the identity provider
    suspended someone, and which of their keys in use now answer `suspended-key`."""
    recipients = owner_emails(membership.workspace, besides=membership.user_id)
    if not recipients:
        return
    person, workspace = membership.user.email, membership.workspace
    in_use = keys_in_use(membership)
    hand_over = settings.SITE_URL + reverse("team:hand_over", args=[membership.pk])
    if in_use:
        listed = "\n".join(
            f"  - {key.name} ({key.hint}), last used {moment_text(key.last_used_at)}"
            for key in in_use
            if key.last_used_at
        )
        keys = (
            f"These keys of theirs were used in the last 30 days and now answer 401 "
            f"suspended-key:\n{listed}\n\nIf an integration depends on one, hand it over to a "
            f"service account so it keeps working:\n{hand_over}\n"
        )
    else:
        keys = "None of their keys was used in the last 30 days.\n"
    send_email.enqueue(
        f"{person} was suspended in {workspace.name} by your identity provider",
        f"Your identity provider suspended {person} in {workspace.name}: they can no longer "
        f"open it, and their keys there are paused (kept, and working again if the provider "
        f"restores them).\n\n{keys}",
        recipients,
    )


def welcome_provisioned(membership: Membership) -> None:
    """Tell a person the identity provider added how to reach the workspace: their new account
    chooses its password first (the sign-in page's reset), or signs in through the provider."""
    workspace = membership.workspace
    sign_in = settings.SITE_URL + reverse("account_login")
    reset = settings.SITE_URL + reverse("account_reset_password")
    send_email.enqueue(
        f"You were added to {workspace.name} on Gatehouse",
        f"{workspace.name}'s identity provider added you to its team on Gatehouse as an "
        f"admin.\n\nYour account is {membership.user.email}. Sign in through your identity "
        f"provider if {workspace.name} offers it, or choose a password here first:\n{reset}\n\n"
        f"Sign in: {sign_in}\n",
        [membership.user.email],
    )
