"""Approval of new keys (docs/product.md §10): a key the workspace's policy covers is created
waiting (apps/approvals/requests.py); an owner other than its holder approves or denies
it; one left waiting 7 days is denied by the schedule. Owners are reminded daily; the holder
learns the decision. Every decision is one conditional UPDATE, so of two decisions at once (or a
decision and a revocation) exactly one lands."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import summarize_scopes
from apps.api_keys.audit_actions import KEY_APPROVED, KEY_DENIED
from apps.api_keys.links import key_links
from apps.api_keys.models import WAITING, ApiKey
from apps.audit.services import Actor, audit_record
from apps.common.dates import moment_text
from apps.common.tasks import send_email
from apps.common.validation import clean_long_text
from apps.common.wording import pluralize
from apps.workspaces.holders import place_problem
from apps.workspaces.models import Membership, Workspace, owner_emails

from .requests import waiting_list_url

# A key nobody answered for this long is denied.
WAIT_AT_MOST = timedelta(days=7)
UNANSWERED = "No owner answered within 7 days."
REASON_MAX_LENGTH = 500


class NotWaiting(Exception):
    """The key does not wait for approval (any more): the API's 409 conflict."""


@dataclass(frozen=True)
class Decision:
    approve: bool
    reason: str = ""


def approval_decider_problem(user: User, key: ApiKey) -> str | None:
    """Why `user` may not approve or deny `key`, or None: only an owner of its workspace who
    is not its holder decides (docs/product.md §10)."""
    if user.pk == key.user_id:
        return "Nobody approves or denies a key of their own; another owner decides."
    membership = Membership.objects.filter(user=user, workspace_id=key.workspace_id).first()
    if problem := place_problem(user, key.workspace, membership, staff=True):
        return problem
    assert membership is not None  # place_problem says so otherwise
    if membership.role != Membership.Role.OWNER:
        return "Only the workspace's owners approve or deny keys."
    return None


def waiting_keys(workspace: Workspace, *, now: datetime | None = None) -> "list[ApiKey]":
    """The keys of `workspace` waiting for an owner, oldest request first."""
    now = now or timezone.now()
    return list(
        ApiKey.objects.filter(workspace=workspace)
        .in_state("pending", now)
        .select_related("user", "workspace")
        .order_by("approval_requested_at", "id")
    )


def waiting_count(workspace: Workspace) -> int:
    """How many keys of `workspace` wait (the navigation's count): one indexed count."""
    return ApiKey.objects.filter(workspace=workspace).in_state("pending").count()


def clean_reason(value: object) -> str:
    """A denial's optional reason: up to 500 characters."""
    return clean_long_text(value or "", "reason", max_length=REASON_MAX_LENGTH, required=False)


def api_key_decide(*, key: ApiKey, decision: Decision, actor: Actor) -> ApiKey:
    """Approve or deny a waiting key as `actor` (a person: see approval_decider_problem, which
    the caller checks). Raises NotWaiting when the key is not pending, decided or revoked by
    someone else first included. Audited, announced by webhook and e-mailed to the holder in
    the decision's transaction."""
    now = timezone.now()
    reason = "" if decision.approve else clean_reason(decision.reason)
    fields = (
        {"approved_at": now, "approved_by": actor.user}
        if decision.approve
        else {"denied_at": now, "denied_by": actor.user, "denial_reason": reason}
    )
    unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    with transaction.atomic():
        decided = ApiKey.objects.filter(
            WAITING, unexpired, pk=key.pk, revoked_at__isnull=True
        ).update(**fields)
        key.refresh_from_db()
        if not decided:
            raise NotWaiting(f"This key does not wait for approval: it is {key.state_at(now)}.")
        _record_decision(key, decision.approve, reason, actor)
    return key


def _record_decision(key: ApiKey, approved: bool, reason: str, actor: Actor) -> None:
    audit_record(
        workspace=key.workspace,
        action=KEY_APPROVED if approved else KEY_DENIED,
        actor=actor,
        key=key,
        subject=f"{key.name} ({key.hint})",
        data={} if approved else {"reason": reason},
    )
    _mail_decision(key, approved, reason, actor)


def _mail_decision(key: ApiKey, approved: bool, reason: str, actor: Actor) -> None:
    page = key_links(key, settings.SITE_URL)["page"]
    who = actor.user.email if actor.user is not None else "Gatehouse"
    if approved:
        subject = f"Your API key “{key.name}” was approved"
        body = (
            f"{who} approved the API key “{key.name}” ({key.hint}) in {key.workspace.name}. "
            "It works from now on, with the secret you copied when you created it.\n\n"
            f"The key:\n{page}\n"
        )
    else:
        subject = f"Your API key “{key.name}” was denied"
        because = f"\n\nTheir reason: {reason}" if reason else ""
        if actor.user is None:
            because = f"\n\n{UNANSWERED}"
        body = (
            f"{who} denied the API key “{key.name}” ({key.hint}) in {key.workspace.name}. It "
            f"will never work; remove its secret from wherever you put it.{because}\n\n"
            f"The key:\n{page}\n"
        )
    send_email.enqueue(subject, body, [key.user.email])


def api_keys_deny_unanswered(*, now: datetime | None = None) -> int:
    """Deny every key that has waited 7 days (the schedule, "no answer in 7 days"); return
    how many."""
    now = now or timezone.now()
    stale = (
        ApiKey.objects.filter(approval_requested_at__lte=now - WAIT_AT_MOST)
        .in_state("pending", now)
        .select_related("workspace", "user")
    )
    denied = 0
    for key in stale:
        with transaction.atomic():
            written = ApiKey.objects.filter(WAITING, pk=key.pk, revoked_at=None).update(
                denied_at=now, denial_reason=UNANSWERED
            )
            if not written:
                continue  # an owner decided meanwhile
            key.refresh_from_db()
            _record_decision(key, False, UNANSWERED, Actor.of_operator("schedule"))
        denied += 1
    return denied


def api_keys_remind_owners(*, now: datetime | None = None) -> int:
    """The daily reminder: one e-mail per workspace with waiting keys to its owners; return
    how many workspaces were reminded."""
    now = now or timezone.now()
    workspace_ids = (
        ApiKey.objects.in_state("pending", now)
        .values_list("workspace_id", flat=True)
        .distinct()
        .order_by()
    )
    reminded = 0
    for workspace in Workspace.objects.filter(pk__in=list(workspace_ids)):
        keys = waiting_keys(workspace, now=now)
        zone = ZoneInfo(workspace.timezone)
        with transaction.atomic():
            for owner in owner_emails(workspace):
                # An owner is never asked about their own request.
                theirs = [key for key in keys if key.user.email != owner]
                if not theirs:
                    continue
                lines = "\n".join(
                    f"- “{key.name}” of {key.user.email}: {summarize_scopes(key.scopes)}, "
                    f"waiting since {moment_text(key.approval_requested_at or now, zone)}"
                    for key in theirs
                )
                n = len(theirs)
                send_email.enqueue(
                    f"{n} API key{pluralize(n)} {pluralize(n, 'waits,wait')} for your approval "
                    f"in {workspace.name}",
                    f"{pluralize(n, 'This key does,These keys do')} not work until an owner "
                    f"approves {pluralize(n, 'it,them')}; unanswered for 7 days, a key is "
                    f"denied.\n\n{lines}\n\n"
                    f"Approve or deny {pluralize(n, 'it,them')}:\n{waiting_list_url()}\n",
                    [owner],
                )
        reminded += 1
    return reminded


def api_key_approval_job() -> str:
    """The hourly job: deny keys unanswered for 7 days."""
    return f"{api_keys_deny_unanswered()} denied after 7 days"


def api_key_reminder_job() -> str:
    """The daily job: remind owners of the keys waiting for them."""
    reminded = api_keys_remind_owners()
    return f"{reminded} workspace{pluralize(reminded)} reminded"
