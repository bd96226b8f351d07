"""Delivering a stream's outbox: one worker at a time per stream (a lease on its row), its
events in order, in batches; a batch that fails is tried again after about 5 s, 30 s, 2 min,
5 min, 15 min, 30 min, then every hour, and it holds up the events behind it (order is kept).
A stream failing for AUDIT_STREAM_DAYS is disabled and its owners told by e-mail; a backlog
older than that is dropped."""

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone
from django_tasks import task

from apps.common.dates import moment_text
from apps.common.metrics import stream_batch_observed
from apps.deliveries.engine import OwnersNotice, RetrySchedule, destination_disable_failing

from .audit_actions import STREAM_DISABLED
from .models import AuditStream, AuditStreamItem
from .sending import SendFailed, records, send_https, send_syslog

logger = logging.getLogger("apps.audit_streams")

RETRIES = RetrySchedule(
    [
        timedelta(seconds=5),
        timedelta(seconds=30),
        timedelta(minutes=2),
        timedelta(minutes=5),
        timedelta(minutes=15),
        timedelta(minutes=30),
        timedelta(hours=1),
    ],
    repeat_last=True,
)
BATCH = {AuditStream.Kind.HTTPS: 100, AuditStream.Kind.SYSLOG: 500}
LOCK_FOR = timedelta(seconds=120)  # longer than a run may take (RUN_SECONDS and one batch)
RUN_SECONDS = 30  # a run ends after this; the next task carries on


def keep_days() -> timedelta:
    return timedelta(days=settings.AUDIT_STREAM_DAYS)


def _claim(stream_id: int, now: datetime) -> bool:
    due = (
        Q(pk=stream_id, enabled=True)
        & (Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        & (Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now + timedelta(seconds=1)))
    )
    return bool(AuditStream.objects.filter(due).update(locked_until=now + LOCK_FOR))


def stream_deliver_now(stream_id: int) -> bool | None:
    """Send a stream's waiting events in order until none is left, a batch fails, or the run's
    time is up (True: all sent; False: a batch failed; None: not this worker's to send now)."""
    if not _claim(stream_id, timezone.now()):
        return None
    outcome: bool | None = True
    try:
        outcome = _send_waiting(AuditStream.objects.select_related("workspace").get(pk=stream_id))
    finally:
        AuditStream.objects.filter(pk=stream_id).update(locked_until=None)
    # An event committed while this run held the stream: its own task found it held.
    if outcome is not False and AuditStreamItem.objects.filter(stream_id=stream_id).exists():
        stream_deliver.enqueue([stream_id])
    return outcome


def stream_send_now(stream: AuditStream, record: dict[str, Any], batch_id: str) -> str | None:
    """Send one record at once, past the stream's waiting events (a test event): why it
    failed, or None. A success counts as a delivery and wakes a stream waiting to retry."""
    now = timezone.now()
    try:
        if stream.kind == AuditStream.Kind.HTTPS:
            send_https(stream, [record], batch_id, now)
        else:
            send_syslog(stream, [record])
    except SendFailed as failure:
        return str(failure)
    except Exception as exc:  # a URL the client refuses, say
        logger.warning("Audit stream %s: a test event failed", stream.pk, exc_info=True)
        return f"Could not send: {type(exc).__name__}"
    AuditStream.objects.filter(pk=stream.pk).update(
        last_delivery_at=now, delivered_count=F("delivered_count") + 1
    )
    waiting = stream.next_attempt_at is not None and stream.next_attempt_at > now
    if stream.enabled and waiting:
        # The destination answers again: its backlog is tried now, not at the back-off's end.
        AuditStream.objects.filter(pk=stream.pk).update(next_attempt_at=None)
        stream_deliver.enqueue([stream.pk])
    return None


def _send_waiting(stream: AuditStream) -> bool | None:
    started = time.monotonic()
    while time.monotonic() - started < RUN_SECONDS:
        items = list(
            AuditStreamItem.objects.filter(stream=stream)
            .select_related("event", "event__key")
            .order_by("seq")[: BATCH[AuditStream.Kind(stream.kind)]]
        )
        if not items:
            return True
        now = timezone.now()
        batch = records(stream, items)
        try:
            if stream.kind == AuditStream.Kind.HTTPS:
                send_https(stream, batch, f"ast_{stream.pk}_{items[0].seq}_{items[-1].seq}", now)
            else:
                send_syslog(stream, batch)
        except SendFailed as failure:
            stream_batch_observed(len(items), None)
            _failed(stream, str(failure), now)
            return False
        except Exception as exc:  # a URL the client refuses, say: logged, then retried
            logger.warning("Audit stream %s: a batch failed", stream.pk, exc_info=True)
            stream_batch_observed(len(items), None)
            _failed(stream, f"Could not send: {type(exc).__name__}", now)
            return False
        sent_at = timezone.now()
        stream_batch_observed(len(items), (sent_at - items[0].created_at).total_seconds())
        _sent(stream, items, sent_at)
    return None


def _sent(stream: AuditStream, items: list[AuditStreamItem], now: datetime) -> None:
    with transaction.atomic():
        AuditStreamItem.objects.filter(pk__in=[item.pk for item in items]).delete()
        AuditStream.objects.filter(pk=stream.pk).update(
            last_delivery_at=now,
            delivered_count=F("delivered_count") + len(items),
            failures=0,
            failing_since=None,
            next_attempt_at=None,
        )
    logger.info("Audit stream %s: %d events sent", stream.pk, len(items))


def _failed(stream: AuditStream, error: str, now: datetime) -> None:
    """Note the failure, and queue the next attempt after the back-off."""
    failures = stream.failures + 1
    retry_at = RETRIES.next_attempt_at(now, failures)
    assert retry_at is not None  # a stream tries again every hour, until it is disabled
    since = stream.failing_since or now
    AuditStream.objects.filter(pk=stream.pk).update(
        failures=failures,
        failing_since=since,
        last_error=error[:300],
        last_error_at=now,
        next_attempt_at=retry_at,
    )
    logger.warning("Audit stream %s failed (%d in a row): %s", stream.pk, failures, error)
    if now - since >= keep_days():
        stream_disable_failing(stream, since, error)
    else:
        stream_deliver.using(run_after=retry_at).enqueue([stream.pk])


def stream_disable_failing(stream: AuditStream, since: datetime, error: str) -> None:
    """Turn off a stream that has failed for AUDIT_STREAM_DAYS and tell the owners."""
    days = settings.AUDIT_STREAM_DAYS
    link = settings.SITE_URL + reverse("audit_streams:list")
    destination_disable_failing(
        AuditStream.objects.filter(pk=stream.pk),
        workspace=stream.workspace,
        reason=f"Every delivery failed for {days} days.",
        action=STREAM_DISABLED,
        actor_name="audit streaming",
        subject=stream.name,
        data={"failing_since": since.isoformat()},
        notice=OwnersNotice(
            f"Audit stream disabled: {stream.name}",
            f"Every delivery to the audit stream “{stream.name}” ({stream.destination}) of "
            f"{stream.workspace.name} has failed since {moment_text(since, UTC)}, so it is now "
            f"disabled. Events are kept for {days} days; resume the stream to send them:\n"
            f"{link}\n\nThe last error: {error}\n",
        ),
    )


@task()
def stream_deliver(stream_ids: list[int]) -> None:
    """Send the waiting events of each stream (queued with each event, and after a failure)."""
    for stream_id in stream_ids:
        stream_deliver_now(stream_id)


def streams_sweep() -> None:
    """Every minute: a stream with events waiting that no task will send (a worker died with
    it) is queued again; events older than AUDIT_STREAM_DAYS are dropped."""
    now = timezone.now()
    AuditStreamItem.objects.filter(created_at__lt=now - keep_days()).delete()
    overdue = now - timedelta(minutes=1)  # its retry's task should have run by now
    stale = (
        AuditStream.objects.filter(enabled=True, items__isnull=False)
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=overdue))
        .values_list("pk", flat=True)
        .distinct()
    )
    ids = list(stale)
    if ids:
        stream_deliver.enqueue(ids)
