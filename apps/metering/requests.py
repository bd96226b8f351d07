"""The way in and the way out of every metered request (the HTTP API and MCP).

`admit` takes the request's place in its rate-limit bucket and, with Redis, counts and logs the
request in that same script call as the answer it will have if nothing else goes wrong; `finish`
closes the record with the answer's status and error: a correction of what `admit` counted (or
the count itself), the log entry's completion (or the whole entry), a refusal counted against
the key it names (apps/metering/refusals.py), and the flush when it is due.
Between them the request's `RequestFacts` carry what the record needs.
"""

import json
import time
from datetime import UTC, datetime

from django.conf import settings
from django.http import HttpRequest

from apps.common.metrics import (
    instruments,
    key_lookup_observed,
    request_observed,
    status_class,
)
from apps.common.spans import span_attributes

from .buffer import Gathered, add, buffer_reset, request_done
from .facts import RequestFacts, request_facts
from .limits import rate_limit_take
from .networks import networks_reset, note_network
from .pending import (
    noted_key,
    redis_log_add,
    redis_pending_add,
    redis_pending_reset,
    redis_unsettled_answer,
)
from .quotas import QuotaTake, quota_give_back
from .records import (
    COLUMN_LIMITS,
    OPERATION_MAX,
    PATH_MAX,
    REFUSAL_STATUSES,
    USER_AGENT_MAX,
    RequestEntry,
    column_text,
    count_field,
    entry_fields,
    hour_now,
    log_item,
    outcome_of,
)
from .redis_call import NOTHING, LimiterNote
from .refusals import refusal_count
from .standing import RateLimitState


def admit(
    request: HttpRequest,
    *,
    limit: int,
    failed_credential: bool = False,
    now: datetime | None = None,
    quota: QuotaTake | None = None,
) -> RateLimitState | None:
    """Take the request's place in its bucket and open its record; its standing, or None when
    limits are off.

    A key that authenticated (`facts.key_id`) goes in the key's bucket of `limit` a minute,
    counted as 200 if allowed (its network noted for the flush) and 429 if refused; its
    standing goes to the facts for the RateLimit fields. A `failed_credential` goes in the
    client address's bucket of refused credentials, counted as 401 or 429, and a refusal
    blocks the address on every app server (with Redis). A key's `quota` is taken in the same
    step; the unit is given back by `finish` when the answer is not a counted 2xx.
    """
    facts = request_facts(request)
    ip = facts.client_ip
    key_id = facts.key_id
    if failed_credential:
        bucket, block, allowed_as = f"authfail:{ip or 'unknown'}", ip or "unknown", 401
    else:
        assert key_id is not None
        bucket, block, allowed_as = f"key:{key_id}", None, 200
    note = _limiter_note(request, facts, allowed_as, 429)
    state = rate_limit_take(bucket, limit, block=block, note=note, quota=quota)
    if quota is not None and state is not None and state.quota and not state.quota.refused:
        if state.quota.in_database:
            facts.quota_give_back = quota.give_back_in_database
        else:
            redis_key = quota.redis_key
            facts.quota_give_back = lambda: quota_give_back(redis_key)
    if state is not None and state.refused:
        reason = "address" if failed_credential else "quota" if state.quota_spent else "key"
        instruments().rate_limited.labels(reason).inc()
    if state is not None and state.counted:
        facts.counted = note.count_refused if state.refused else note.count_allowed
        facts.logged = bool(note.log_entry)
    elif state is not None and state.unsettled:
        facts.unsettled = note.count_allowed
    if key_id is not None and not failed_credential:
        facts.rate_limit = state
        if state is None or not state.refused:
            note_network(key_id, ip, now or datetime.now(UTC))
    return state


def finish(request: HttpRequest, status: int, error: str) -> None:
    """Close the request's record with its answer: count it and complete its log entry when it
    presented a key of ours, then flush when flushing is synchronous."""
    facts = request_facts(request)
    if facts.answered_as is not None:
        status, error = facts.answered_as
    if facts.quota_give_back is not None and (facts.quota_exempt or not 200 <= status < 300):
        facts.quota_give_back()  # only answered 2xx requests are counted (§17)
        facts.quota_give_back = None
    if facts.key_id is not None:
        if facts.unsettled is None or not _answer_unsettled(request, facts, status, error):
            _count(facts, status)
            _log(request, facts, status, error)
        if status in REFUSAL_STATUSES:
            refusal_count(facts.key_id, error)
    _observe(facts, status, error)
    request_done()
    # The request's context stays for the lines logged after its answer (Django's own
    # `django.request` warning, gunicorn's access line); the next request sets its own.


# The refusals that say what a presented credential was (apps/api/errors.py).
_KEY_REFUSED = frozenset(
    {"expired-key", "revoked-key", "pending-key", "denied-key", "suspended-key"}
)


def _observe(facts: RequestFacts, status: int, error: str) -> None:
    """The request in the Prometheus metrics (apps/common/metrics.py): its door, operation,
    status and duration; the credential it presented; its workspace when the operator opted
    in (METRICS_WORKSPACE_LABELS)."""
    seconds = time.perf_counter() - facts.started
    request_observed(facts.door, facts.operation or "other", status, error, seconds)
    if facts.door == "mcp" and facts.operation:
        # OpenTelemetry's MCP conventions: the method, and the tool a tools/call ran.
        method = facts.operation if "/" in facts.operation else "tools/call"
        tool = {} if "/" in facts.operation else {"gen_ai.tool.name": facts.operation}
        span_attributes({"mcp.method.name": method, **tool})
    if error == "missing-key":
        result = "missing"
    elif facts.key_id is None:
        result = "unknown" if error == "invalid-key" else ""
    else:
        result = "refused" if error in _KEY_REFUSED else "active"
    if result:
        key_lookup_observed(result)
    if facts.workspace_id is not None and settings.METRICS_WORKSPACE_LABELS:
        instruments().workspace_requests.labels(
            str(facts.workspace_id), facts.door, status_class(status)
        ).inc()


def _limiter_note(
    request: HttpRequest, facts: RequestFacts, allowed: int, refused: int
) -> LimiterNote:
    """What the limiter's call writes with Redis: this request's count and log entry, as the
    answer it gets if allowed and if refused. With no key, none."""
    if facts.key_id is None or not settings.REDIS_URL:
        return NOTHING
    hour, operation = hour_now(), _counted_as(facts)
    entry = json.dumps(
        entry_fields(_entry(request, facts, 0, "")), separators=(",", ":"), ensure_ascii=False
    )
    return LimiterNote(
        count_allowed=count_field((facts.key_id, hour, operation, outcome_of(allowed))),
        count_refused=count_field((facts.key_id, hour, operation, outcome_of(refused))),
        log_entry=entry,
        status_allowed=allowed,
        status_refused=refused,
        mark=noted_key(facts.request_id),
    )


def _counted_as(facts: RequestFacts) -> str:
    """The operation a request is counted under: usage keeps the doors apart by name
    (`mcp:get_workspace`), the request log by its door column."""
    operation = column_text(facts.operation or "other", OPERATION_MAX)
    return f"mcp:{operation}" if facts.door == "mcp" and operation != "mcp" else operation


def _answer_unsettled(request: HttpRequest, facts: RequestFacts, status: int, error: str) -> bool:
    """Hand the answer of a request whose limiter call failed to its settling (exactly one
    record, whether or not Redis ran the call: apps/metering/settling.py)."""
    assert facts.key_id is not None and facts.unsettled is not None
    hour = int(facts.unsettled.split("|", 2)[1])
    final = count_field((facts.key_id, hour, _counted_as(facts), outcome_of(status)))
    return redis_unsettled_answer(
        noted_key(facts.request_id),
        final,
        log_item("C", _completion(facts, status, error)),
        log_item("F", entry_fields(_entry(request, facts, status, error))),
    )


def _count(facts: RequestFacts, status: int) -> None:
    """With Redis, correct what the limiter's call counted if the answer differs (or count the
    request, if the call did not); without, in the buffer the next flush writes."""
    assert facts.key_id is not None
    operation, outcome = _counted_as(facts), outcome_of(status)
    if facts.counted is not None:
        counted_hour = int(facts.counted.split("|", 2)[1])
        final = count_field((facts.key_id, counted_hour, operation, outcome))
        if final != facts.counted:
            redis_pending_add((facts.counted, -1), (final, 1))
    elif settings.REDIS_URL:
        redis_pending_add((count_field((facts.key_id, hour_now(), operation, outcome)), 1))
    else:
        this_hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        counted = (facts.key_id, this_hour, operation, outcome)

        def update(gathered: Gathered) -> None:
            gathered.counts[counted] += 1

        add(update)


def _log(request: HttpRequest, facts: RequestFacts, status: int, error: str) -> None:
    """With Redis, complete the entry the limiter's call pushed (or push the whole entry, when
    it pushed none); without, the entry waits in the buffer."""
    if facts.logged:
        redis_log_add(log_item("C", _completion(facts, status, error)))
        return
    entry = _entry(request, facts, status, error)
    if settings.REDIS_URL:
        redis_log_add(log_item("F", entry_fields(entry)))
        return

    def update(gathered: Gathered) -> None:
        gathered.requests.append(entry)

    add(update)


def _completion(facts: RequestFacts, status: int, error: str) -> list[object]:
    """What the answer adds to an entry pushed as the request began."""
    duration = round((time.perf_counter() - facts.started) * 1000, 2)
    operation = column_text(facts.operation or "other", OPERATION_MAX)
    object_id = column_text(facts.object_id, COLUMN_LIMITS["object_id"])
    return [facts.request_id, status, error, duration, operation, object_id]


def _entry(request: HttpRequest, facts: RequestFacts, status: int, error: str) -> RequestEntry:
    assert facts.key_id is not None
    return RequestEntry(
        facts.request_id,
        datetime.now(UTC),
        facts.key_id,
        facts.door,
        str(request.method),
        column_text(request.path, PATH_MAX),
        column_text(facts.operation or "other", OPERATION_MAX),
        status,
        error,
        None if status == 0 else round((time.perf_counter() - facts.started) * 1000, 2),
        facts.client_ip,
        column_text(request.META.get("HTTP_USER_AGENT", ""), USER_AGENT_MAX),
        column_text(facts.object_id, COLUMN_LIMITS["object_id"]),
    )


def metering_reset() -> None:
    """Forget everything this process gathered, owes Redis or queued (for tests)."""
    buffer_reset()
    redis_pending_reset()
    networks_reset()
