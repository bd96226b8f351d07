"""Each audit event into the outbox of every stream that takes it, in the transaction of the
event: no event streamed without its change, no change without its event.

Events are numbered per stream in commit order: the number is taken by an UPDATE of the
stream's row, whose lock is held until the transaction ends, so a transaction that commits
later always takes a higher number (and one that rolls back leaves a gap nobody waits for).
The cost to the change is three statements when its workspace has streams (one when it has
none), and concurrent audited changes of one workspace commit one after the other."""

from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .delivery import stream_deliver
from .models import AuditStream, AuditStreamItem

if TYPE_CHECKING:
    from apps.audit.models import AuditEvent


def stream_audited(event: "AuditEvent") -> None:
    """The audit listener: queue `event` for the workspace's streams whose filter takes it."""
    streams = AuditStream.objects.filter(workspace_id=event.workspace_id).values_list(
        "pk", "actions", "enabled"
    )
    taking = [(pk, enabled) for pk, actions, enabled in streams if takes(actions, event.action)]
    if taking:
        stream_enqueue([pk for pk, _ in taking], event=event, wake=[pk for pk, on in taking if on])


def takes(actions: list[str], action: str) -> bool:
    """Whether a stream's filter lets `action` through ([] lets everything through)."""
    return not actions or action in actions


def stream_enqueue(
    stream_ids: list[int],
    *,
    event: "AuditEvent | None" = None,
    payload: str = "",
    wake: list[int] | None = None,
) -> None:
    """Add an item (an audit event, or a test event's `payload`) to each stream's outbox and
    queue a delivery task for the streams in `wake`. Must run inside the transaction of the
    change."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("stream_enqueue must run inside the transaction of its change")
    ids = sorted(stream_ids)
    # The rows are locked in the order of their ids first (an UPDATE of several rows locks them
    # in whatever order its scan meets them): two transactions numbering events of the same
    # streams wait for one another, never each for the other.
    list(
        AuditStream.objects.select_for_update(no_key=True)
        .filter(pk__in=ids)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    AuditStream.objects.filter(pk__in=ids).update(next_seq=F("next_seq") + 1)
    numbers = AuditStream.objects.filter(pk__in=ids).values_list("pk", "next_seq")
    at = event.created_at if event is not None else timezone.now()
    AuditStreamItem.objects.bulk_create(
        AuditStreamItem(stream_id=pk, seq=seq, event=event, payload=payload, created_at=at)
        for pk, seq in numbers
    )
    woken = ids if wake is None else wake
    if woken:
        stream_deliver.enqueue(woken)  # one task row, whatever the number of streams
