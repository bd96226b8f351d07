"""What /metrics reads at scrape time rather than counts: the task queue and its workers from
the database, Redis and what waits in it to be moved. A few indexed queries per scrape."""

import time
from collections.abc import Iterator
from datetime import UTC, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from apps.jobs.queue import queue_age, waiting_tasks
from apps.jobs.schedule import schedule_late
from apps.jobs.workers import LEASE
from apps.metering.batches import batches_unmoved
from apps.metering.limits import redis_status
from apps.metering.records import REDIS_COUNTS, REDIS_REQUESTS
from apps.request_log.moving import BATCH_PREFIX as REQUEST_LOG_BATCHES
from apps.request_log.partitions import partitions_existing
from apps.usage.moving import BATCH_PREFIX as USAGE_BATCHES


def _gauge(name: str, documentation: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


class ScrapeCollector:
    """The gauges of the queue, the workers and Redis, as they are at the scrape."""

    def collect(self) -> Iterator[Any]:
        database = _database_up()
        yield _gauge("gatehouse_database_up", "1 when the database answers.", database)
        if database:
            yield from self._queue()
            yield from self._audit_streams()
            yield from self._request_log()
        yield from self._redis()

    def _audit_streams(self) -> Iterator[Any]:
        """What waits to be streamed, and for how long (§14, §15): the lag an alert watches."""
        from apps.audit_streams.models import AuditStream, AuditStreamItem

        waiting = AuditStreamItem.objects.aggregate(n=Count("id"))
        oldest = AuditStreamItem.objects.filter(stream__enabled=True).aggregate(
            oldest=Min("created_at")
        )["oldest"]
        yield _gauge(
            "gatehouse_audit_stream_backlog", "Audit events waiting to be streamed (all streams).",
            waiting["n"] or 0,
        )  # fmt: skip
        yield _gauge(
            "gatehouse_audit_stream_oldest_seconds",
            "How long the oldest event waiting in an enabled stream has waited (0: none).",
            max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0,
        )
        yield _gauge(
            "gatehouse_audit_streams_failing", "Enabled audit streams whose last delivery failed.",
            AuditStream.objects.filter(enabled=True, failures__gt=0).count(),
        )  # fmt: skip

    def _request_log(self) -> Iterator[Any]:
        """Whether tomorrow's partition of the request log exists (PostgreSQL): the daily job
        makes the next two days', so a missing one means that job has not run for a day, and
        at midnight every entry would wait in Redis or the buffer until one is made."""
        if connection.vendor != "postgresql":
            return
        tomorrow = timezone.now().astimezone(UTC).date() + timedelta(days=1)
        yield _gauge(
            "gatehouse_request_log_tomorrow_partition",
            "1 when tomorrow's (UTC) partition of the request log exists (PostgreSQL).",
            float(tomorrow in partitions_existing()),
        )

    def _queue(self) -> Iterator[Any]:
        from apps.jobs.models import WorkerHeartbeat

        now = timezone.now()
        waiting = waiting_tasks()
        yield _gauge(
            "gatehouse_task_queue_depth", "Tasks waiting for a worker (due or scheduled).",
            waiting.count(),
        )  # fmt: skip
        yield _gauge(
            "gatehouse_task_queue_oldest_seconds",
            "How long the oldest task due to run has waited (0: none waits).",
            queue_age(now),
        )
        alive = WorkerHeartbeat.objects.filter(seen_at__gte=now - LEASE).count()
        yield _gauge("gatehouse_task_workers", "Task workers that beat within 45 s.", alive)
        last = WorkerHeartbeat.objects.aggregate(last=Max("seen_at"))["last"]
        if last is not None:
            yield _gauge(
                "gatehouse_task_worker_heartbeat_age_seconds",
                "Seconds since the latest heartbeat of any task worker.",
                max(0.0, (now - last).total_seconds()),
            )
        yield _gauge(
            "gatehouse_schedule_late", "1 when the scheduled jobs' tick is late.",
            float(schedule_late()),
        )  # fmt: skip

    def _redis(self) -> Iterator[Any]:
        status = redis_status()
        if status == "not configured":
            return
        up = status == "ok"
        yield _gauge("gatehouse_redis_up", "1 when Redis answers (when configured).", up)
        if not up:
            return
        batches = GaugeMetricFamily(
            "gatehouse_unmoved_batches",
            "Batches taken from Redis and not yet written to the database, by kind.",
            labels=["kind"],
        )
        oldest = GaugeMetricFamily(
            "gatehouse_unmoved_oldest_seconds",
            "Age of the oldest unmoved batch, by kind (0: none).",
            labels=["kind"],
        )
        waiting = GaugeMetricFamily(
            "gatehouse_unmoved_entries",
            "Entries waiting in Redis for the next move, by kind.",
            labels=["kind"],
        )
        for kind, source, prefix in (
            ("usage", REDIS_COUNTS, USAGE_BATCHES),
            ("request_log", REDIS_REQUESTS, REQUEST_LOG_BATCHES),
        ):
            count, started, entries = batches_unmoved(source, prefix)
            batches.add_metric([kind], count)
            oldest.add_metric([kind], max(0.0, time.time() - started) if started else 0.0)
            waiting.add_metric([kind], entries)
        yield from (batches, oldest, waiting)


def _database_up() -> float:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return 1.0
    except Exception:
        return 0.0
