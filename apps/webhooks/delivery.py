"""Sending a delivery: signed by Standard Webhooks (the `standardwebhooks` library signs), one
POST with a 10 s limit and no redirects, the attempt logged, and on failure the next attempt
scheduled after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. An endpoint failing for 5
days is disabled and its workspace's owners told by e-mail."""

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx
from cryptography.fernet import InvalidToken
from django.conf import settings
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django_tasks import TaskContext, task

from apps.common.dates import moment_text
from apps.common.metrics import delivery_observed
from apps.deliveries.engine import OwnersNotice, RetrySchedule, destination_disable_failing
from apps.jobs.task_writes import after_task

from .audit_actions import WEBHOOK_DISABLED
from .destinations import delivery_client, time_limit
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from .secrets import signature_headers

logger = logging.getLogger("apps.webhooks")

RETRIES = RetrySchedule(
    [
        timedelta(seconds=5),
        timedelta(minutes=5),
        timedelta(minutes=30),
        timedelta(hours=2),
        timedelta(hours=5),
        timedelta(hours=10),
        timedelta(hours=10),
    ]
)
DISABLE_AFTER = timedelta(days=5)
LOCK_FOR = timedelta(seconds=60)  # longer than an attempt can take (WEBHOOK_TIMEOUT_SECONDS)
BODY_KEPT = 2048


def _claim(message_id: str, now: datetime, manual: bool) -> WebhookDelivery | None:
    """Take a delivery for one attempt, unless another worker holds it or it is not due."""
    due = Q(message_id=message_id) & (Q(locked_until__isnull=True) | Q(locked_until__lt=now))
    if not manual:
        due &= Q(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now + timedelta(seconds=1)
        )
    if not WebhookDelivery.objects.filter(due).update(locked_until=now + LOCK_FOR):
        return None
    return WebhookDelivery.objects.select_related("endpoint", "endpoint__workspace").get(
        message_id=message_id
    )


def deliver(
    message_id: str, *, manual: bool = False, client: httpx.Client | None = None
) -> bool | None:
    """Make one attempt at a delivery (True: delivered; None: not ours to send now)."""
    now = timezone.now()
    delivery = _claim(message_id, now, manual)
    if delivery is None:
        return None
    endpoint = delivery.endpoint
    if not endpoint.enabled and not manual:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.FAILED, next_attempt_at=None, locked_until=None
        )
        return False
    attempt = _send(delivery, endpoint, now, client)
    attempt.manual = manual
    after_task(lambda: _record(delivery, endpoint, attempt, now, manual))
    return attempt.succeeded


def _deliver_new(delivery: WebhookDelivery) -> None:
    """The first attempt at a delivery not yet written: nobody else can see it, so no hold; its
    row is written with the outcome (with the task's result, under `manage.py worker`)."""
    now = timezone.now()
    endpoint = delivery.endpoint
    if not endpoint.enabled:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
        after_task(lambda: delivery.save(force_insert=True))
        return
    attempt = _send(delivery, endpoint, now, None)
    after_task(lambda: _record(delivery, endpoint, attempt, now, False, new=True))


def _send(
    delivery: WebhookDelivery, endpoint: WebhookEndpoint, now: datetime, client: httpx.Client | None
) -> WebhookAttempt:
    """One POST within the time limit, reading at most 2 KB of the answer. Whatever goes
    wrong is a failed attempt with its reason, never a task that dies and leaves the delivery
    untried."""
    attempt = WebhookAttempt(delivery=delivery, number=delivery.attempts + 1, at=now)
    limit = float(settings.WEBHOOK_TIMEOUT_SECONDS)
    started = time.perf_counter()
    try:
        headers = signature_headers(endpoint, delivery.message_id, delivery.payload, now)
        with (
            time_limit(limit),
            (client or delivery_client()).stream(
                "POST", endpoint.url, content=delivery.payload.encode(), headers=headers
            ) as response,
        ):
            attempt.response_status = response.status_code
            attempt.response_body = _first_bytes(response).decode("utf-8", "replace")
        attempt.succeeded = 200 <= response.status_code < 300
        if 300 <= response.status_code < 400:
            attempt.error = "Redirects are not followed: answer 2xx at this URL."
    except (httpx.TimeoutException, httpcore.TimeoutException):
        attempt.error = f"No complete answer within {limit:g} seconds."
    except (httpx.HTTPError, httpcore.ConnectError) as exc:
        attempt.error = f"Could not connect: {exc}"[:300]
    except InvalidToken:
        attempt.error = "The signing secret cannot be read (SECRET_KEY changed): roll it."
    except Exception as exc:  # a URL the client refuses, say: logged, then retried
        logger.warning("Webhook delivery %s failed", delivery.message_id, exc_info=True)
        attempt.error = f"Could not send: {type(exc).__name__}"
    attempt.duration_ms = round((time.perf_counter() - started) * 1000)
    delivery_observed(attempt.succeeded, (timezone.now() - delivery.created_at).total_seconds())
    logger.info(
        "Webhook %s %s to %s: %s in %d ms",
        delivery.event_type,
        delivery.message_id,
        urlsplit(endpoint.url).netloc,  # not the path or query: they may hold a token
        attempt.response_status or attempt.error,
        attempt.duration_ms,
    )
    return attempt


def _first_bytes(response: httpx.Response) -> bytes:
    """The answer's first 2 KB (never the rest), a NUL made U+FFFD: PostgreSQL keeps no NUL."""
    kept = b""
    for chunk in response.iter_raw(BODY_KEPT):
        kept += chunk
        if len(kept) >= BODY_KEPT:
            break
    return kept[:BODY_KEPT].replace(b"\x00", b"\xff")


def _record(
    delivery: WebhookDelivery,
    endpoint: WebhookEndpoint,
    attempt: WebhookAttempt,
    now: datetime,
    manual: bool,
    *,
    new: bool = False,
) -> None:
    """Write an attempt and what it makes of its delivery: a task's write (`after_task`), which
    runs again if its transaction did not commit, so it inserts whatever a rolled-back run left
    a primary key on. `new`: the delivery's first attempt (_deliver_new), its row inserted as it
    ends up."""
    delivery.attempts = attempt.number
    delivery.locked_until = None
    if attempt.succeeded:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.DELIVERED, None
        if endpoint.failing_since is not None:  # as read before the attempt
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=None)
    else:
        earlier = 0 if new else sum(1 for t in delivery.tries.all() if not t.manual)
        retries = earlier + (0 if manual else 1)
        next_at = None if manual else RETRIES.next_attempt_at(now, retries)
        if next_at is not None:
            delivery.next_attempt_at = next_at
            deliver_one.using(run_after=next_at).enqueue(delivery.message_id)
        elif not manual:
            delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
        _note_failure(endpoint, now)
    if new:
        delivery.save(force_insert=True)
    else:
        delivery.save(update_fields=["attempts", "locked_until", "status", "next_attempt_at"])
    attempt.delivery = delivery  # its id as inserted now
    attempt.save(force_insert=True)


def _note_failure(endpoint: WebhookEndpoint, now: datetime) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint.pk, failing_since__isnull=True).update(
        failing_since=now
    )
    endpoint.refresh_from_db(fields=["failing_since", "enabled"])
    if (
        endpoint.enabled
        and endpoint.failing_since
        and now - endpoint.failing_since >= DISABLE_AFTER
    ):
        endpoint_disable_failing(endpoint, now)


def endpoint_disable_failing(endpoint: WebhookEndpoint, now: datetime) -> None:
    """Turn off an endpoint that has failed for 5 days and tell the workspace's owners."""
    assert endpoint.failing_since is not None  # it is disabled for failing since then
    link = settings.SITE_URL + reverse("webhooks:detail", args=[endpoint.pk])
    destination_disable_failing(
        WebhookEndpoint.objects.filter(pk=endpoint.pk),
        workspace=endpoint.workspace,
        reason="Every delivery failed for 5 days.",
        action=WEBHOOK_DISABLED,
        actor_name="webhook deliveries",
        subject=endpoint.url,
        data={"failing_since": endpoint.failing_since.isoformat()},
        notice=OwnersNotice(
            f"Webhook endpoint disabled: {endpoint.url}",
            f"Every delivery to the webhook endpoint {endpoint.url} of "
            f"{endpoint.workspace.name} has failed since "
            f"{moment_text(endpoint.failing_since, UTC)}, so it is now disabled: no events "
            f"are sent to it.\n\nIts delivery log, and the switch to enable it again:\n{link}\n",
        ),
    )


def message_id_of(event_id: str, endpoint_id: int) -> str:
    """The `webhook-id` of an event's delivery to an endpoint: the same on every attempt, and
    the same if the event is fanned out again."""
    return f"msg_{event_id}_{endpoint_id}"


@task(takes_context=True)
def deliver_event(
    context: TaskContext,
    event_id: str,
    event_type: str,
    body: str,
    endpoint_ids: list[int],
    at: str,
) -> None:
    """An event, as the request queued it. For a single endpoint, the first attempt here, its
    delivery written with the outcome; for several, the deliveries written (once, whatever the
    number of runs) and each attempted in its own task, so a slow endpoint never holds up
    another."""
    created = datetime.fromisoformat(at)
    deliveries = [
        WebhookDelivery(
            endpoint=endpoint,
            message_id=message_id_of(event_id, endpoint.pk),
            event_type=event_type,
            payload=body,
            created_at=created,
            next_attempt_at=created,
        )
        for endpoint in WebhookEndpoint.objects.filter(pk__in=endpoint_ids).order_by()
    ]  # an endpoint removed meanwhile gets nothing
    if len(deliveries) == 1 and context.attempt == 1:  # a first run: nothing of it written yet
        _deliver_new(deliveries[0])
    elif len(deliveries) == 1:  # run again after its worker died: the delivery may be sent or held
        WebhookDelivery.objects.bulk_create(deliveries, ignore_conflicts=True)
        deliver(deliveries[0].message_id)
    elif deliveries:
        after_task(lambda: _fan_out(deliveries))


def _fan_out(deliveries: list[WebhookDelivery]) -> None:
    WebhookDelivery.objects.bulk_create(deliveries, ignore_conflicts=True)
    for delivery in deliveries:
        deliver_one.enqueue(delivery.message_id)


def endpoint_waited_on(args: list[Any], kwargs: dict[str, Any]) -> str:
    """What a delivery task waits on, from its arguments: its endpoint (deliver_one's message
    id ends with it; deliver_event names it, or fans out to several, which waits on nothing)."""
    message_id = kwargs.get("message_id", args[0] if args else "")
    if isinstance(message_id, str) and message_id.startswith("msg_"):
        return "endpoint:" + message_id.rsplit("_", 1)[-1]
    endpoint_ids = kwargs.get("endpoint_ids", args[3] if len(args) > 3 else [])
    if isinstance(endpoint_ids, list) and len(endpoint_ids) == 1:
        return f"endpoint:{endpoint_ids[0]}"
    return "fan-out"


@task()
def deliver_one(message_id: str, manual: bool = False) -> None:
    deliver(message_id, manual=manual)
