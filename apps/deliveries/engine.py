"""What every outbound signed delivery shares, whatever it carries (a webhook's event, an audit
stream's batch) and however it travels (HTTPS, syslog): when to try again after a failure, how
a destination that keeps failing is turned off and its workspace's owners told, and how one is
deleted. Webhooks (apps/webhooks/delivery.py) and audit streams (apps/audit_streams/delivery.py)
keep only what differs: the payload, the transport and the order they send in."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import models, transaction

from apps.audit.services import Actor, audit_record
from apps.common.tasks import send_email
from apps.workspaces.models import Workspace, owner_emails


@dataclass(frozen=True)
class RetrySchedule:
    """The waits before the next attempt after 1, 2, … failures in a row. Past its end, the
    last wait again (`repeat_last`) or no more attempts."""

    waits: Sequence[timedelta]
    repeat_last: bool = False

    def next_attempt_at(self, now: datetime, failures: int) -> datetime | None:
        """When to try again after `failures` failures in a row (1 for the first); None: never."""
        if failures < 1:
            raise ValueError("a retry follows at least one failure")
        if failures > len(self.waits):
            if not self.repeat_last:
                return None
            failures = len(self.waits)
        return now + self.waits[failures - 1]


@dataclass(frozen=True)
class OwnersNotice:
    """The e-mail to a workspace's owners when one of its destinations is turned off."""

    subject: str
    body: str


def destination_disable_failing(
    destinations: "models.QuerySet[Any]",
    *,
    workspace: Workspace,
    reason: str,
    action: str,
    actor_name: str,
    subject: str,
    data: dict[str, Any],
    notice: OwnersNotice,
) -> bool:
    """Turn off the one destination of `destinations` (filtered to its row) if it is still on,
    record `action` in the audit log and queue the owners' e-mail, all in one transaction; False
    when another worker turned it off first (the conditional UPDATE lets only one win)."""
    with transaction.atomic():
        if not destinations.filter(enabled=True).update(enabled=False, disabled_reason=reason):
            return False
        audit_record(
            workspace=workspace,
            action=action,
            actor=Actor.of_operator(actor_name),
            subject=subject,
            data=data,
        )
        send_email.enqueue(notice.subject, notice.body, owner_emails(workspace))
    return True


def destination_delete(
    destination: models.Model,
    *,
    workspace: Workspace,
    action: str,
    actor: Actor,
    subject: str,
    described: str,
    field: str,
) -> None:
    """Remove a destination with what waits for it or was sent to it (its rows cascade), and
    record it with what it was; nothing more is sent to it."""
    with transaction.atomic():
        audit_record(
            workspace=workspace,
            action=action,
            actor=actor,
            subject=subject,
            data={"field": field, "before": described},
        )
        destination.delete()
