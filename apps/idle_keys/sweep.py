"""Idle keys (docs/product.md §13): under a key policy with `idleDays`, a key unused that long
(or never used since its creation that long ago) is revoked, never sooner than 7 days after
its warning: audited `key.revoked` with reason `idle`, its holder e-mailed (a service
account's: the owners) and a webhook sent. 7 days before, its holder is warned once
(`key.idle_warning`). Any holder, any tag. The `idle-keys` job runs it on the task queue."""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.api_keys.links import key_links
from apps.api_keys.models import ApiKey, ApiKeyQuerySet, ApiKeyState
from apps.api_keys.services import api_key_revoke
from apps.api_keys.states import idle_condition
from apps.audit.services import Actor, audit_record
from apps.common.dates import day_text, moment_text
from apps.common.tasks import send_email
from apps.metering.buffer import batches_move_all
from apps.metering.witnesses import used_since
from apps.workspaces.models import Workspace, holder_emails

from .audit_actions import KEY_IDLE_WARNING
from .models import IdleWarning

WARNING_AHEAD = timedelta(days=7)
SCHEDULE = Actor.of_operator("idle-keys schedule")


def idle_since(key: ApiKey) -> datetime:
    """When the key's idle spell began: its last use, or its creation if never used."""
    return key.last_used_at or key.created_at


def _warned_a_week_ago(key: ApiKey, now: datetime) -> bool:
    return IdleWarning.objects.filter(
        key=key, idle_since=idle_since(key), sent_at__lte=now - WARNING_AHEAD
    ).exists()


def _live_keys(workspace: Workspace, now: datetime) -> ApiKeyQuerySet:
    return (
        ApiKey.objects.in_state(ApiKeyState.ACTIVE, now)
        .filter(workspace=workspace)
        .select_related("user", "workspace")
    )


def idle_keys_revoke(*, now: datetime | None = None) -> int:
    """Revoke every active key idle past its workspace's `idleDays`; return how many.

    What waits in Redis is moved first, and each key is looked at again under its row's lock,
    with the request log asked too: a key that answered a request after its cutoff is never
    taken (a busy key's stamp is written before its answer once it is an hour old, so the row
    cannot lag behind a request that matters here: apps/api_keys/verification.py)."""
    now = now or timezone.now()
    batches_move_all()
    revoked = 0
    for workspace in Workspace.objects.filter(key_idle_days__isnull=False):
        days = workspace.key_idle_days or 0
        for key in _live_keys(workspace, now).filter(idle_condition(days, now)):
            if not _warned_a_week_ago(key, now):
                continue  # a key idle when the policy came in is warned first, revoked after
            if not _revoke_if_still_idle(key, days, now):
                continue
            revoked += 1
            _mail(
                key,
                f"Your API key “{key.name}” was revoked: unused for {days} days",
                f"The API key “{key.name}” ({key.hint}) in {key.workspace.name} was not used "
                f"for {days} days, so it was revoked under the workspace's key policy.\n\n"
                f"If something still needs it, create a new one:\n{_links(key)['recreate']}\n",
            )
    return revoked


def _revoke_if_still_idle(key: ApiKey, days: int, now: datetime) -> bool:
    """Revoke `key` if, under its row's lock, it is still idle `days` and no request of it was
    logged since its cutoff; whether it was revoked now."""
    with transaction.atomic():
        still_idle = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .filter(idle_condition(days, now), pk=key.pk, revoked_at__isnull=True)
            .exists()
        )
        if not still_idle or used_since(key.pk, now - timedelta(days=days)):
            return False
        before = key.revoked_at
        api_key_revoke(key=key, actor=SCHEDULE, reason="idle")
        return before is None and key.revoked_at is not None


def idle_keys_warn(*, now: datetime | None = None) -> int:
    """Warn once, 7 days ahead, of each key that will be revoked as idle; return how many."""
    now = now or timezone.now()
    warned = 0
    for workspace in Workspace.objects.filter(key_idle_days__isnull=False):
        days = workspace.key_idle_days or 0
        due = _live_keys(workspace, now).filter(idle_condition(days, now + WARNING_AHEAD))
        for key in due:
            since = idle_since(key)
            # Never sooner than 7 days after the warning: a key already idle past its day when
            # the policy came in is warned of a date a week ahead, not one gone by.
            revoked_at = max(since + timedelta(days=days), now + WARNING_AHEAD)
            try:
                with transaction.atomic():  # the claim, its audit event and webhook together
                    IdleWarning.objects.create(key=key, idle_since=since, sent_at=now)
                    audit_record(
                        workspace=workspace,
                        action=KEY_IDLE_WARNING,
                        actor=SCHEDULE,
                        key=key,
                        subject=f"{key.name} ({key.hint})",
                        data={"idleDays": days, "revokedAt": revoked_at.isoformat()},
                    )
            except IntegrityError:
                continue  # warned of this spell already
            warned += 1
            _mail(
                key,
                f"Your API key “{key.name}” will be revoked in 7 days unless it is used",
                f"The API key “{key.name}” ({key.hint}) in {key.workspace.name} has not been "
                f"used since {day_text(since)}. Keys unused for {days} days are revoked there, "
                f"so this one will be on {moment_text(revoked_at, UTC)} unless it makes a "
                f"request before.\n\nThe key and its history:\n{_links(key)['page']}\n",
            )
    return warned


def _links(key: ApiKey) -> dict[str, str]:
    return key_links(key, settings.SITE_URL)


def _mail(key: ApiKey, subject: str, body: str) -> None:
    if recipients := holder_emails(key.user, key.workspace):
        send_email.enqueue(subject, body, recipients)


def idle_keys_job() -> str:
    """The scheduled job: revoke what is idle past the policy, then warn of what will be."""
    revoked, warned = idle_keys_revoke(), idle_keys_warn()
    return f"{revoked} idle keys revoked, {warned} warned"
