"""Asking for approval (docs/product.md §10): a key the workspace's policy covers is created
waiting (apps/api_keys sends `key_waiting`), and its owners are told at once, in the key's
creating transaction."""

from zoneinfo import ZoneInfo

from django.conf import settings
from django.urls import reverse

from apps.api.scopes import summarize_scopes
from apps.api_keys.audit_actions import KEY_APPROVAL_REQUESTED
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor, audit_record
from apps.common.dates import moment_text
from apps.common.tasks import send_email
from apps.workspaces.models import owner_emails


def api_key_request_approval(*, key: ApiKey, actor: Actor, **_signal: object) -> None:
    """Tell the owners that `key` (just created, waiting) asks for approval: audited (and so
    the `key.approval_requested` event) and one e-mail to each owner. Inside the key's
    creating transaction."""
    audit_record(
        workspace=key.workspace,
        action=KEY_APPROVAL_REQUESTED,
        actor=actor,
        key=key,
        subject=f"{key.name} ({key.hint})",
        data={"scopes": list(key.scopes), "description": key.description},
    )
    owners = owner_emails(key.workspace, besides=key.user_id)
    if not owners:
        return
    reason = key.description or "(no description given)"
    for owner in owners:  # one e-mail each, as GitHub sends its approval requests
        send_email.enqueue(
            f"{key.user.email} asks you to approve an API key in {key.workspace.name}",
            f"{key.user.email} created the API key “{key.name}” in {key.workspace.name}. It "
            "waits for an owner's approval and does not work until then.\n\n"
            f"Permissions: {summarize_scopes(key.scopes)}\n"
            f"Restrictions: {key.restrictions.summary() or 'none'}\n"
            f"Expires: {expiry_text(key)}\n"
            f"Their reason: {reason}\n\n"
            f"Approve or deny it (unanswered, it is denied after 7 days):\n{waiting_list_url()}\n",
            [owner],
        )


def waiting_list_url() -> str:
    return settings.SITE_URL + reverse("key_pages:waiting")


def expiry_text(key: ApiKey) -> str:
    if key.expires_at is None:
        return "never"
    zone = ZoneInfo(key.workspace.timezone)
    return moment_text(key.expires_at, zone)
