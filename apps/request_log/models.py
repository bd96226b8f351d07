"""The request log: every request that presented a key this server knows (docs/product.md §11).

On PostgreSQL the table is partitioned by day (declarative partitioning, its primary key is
(id, at)): a day past `REQUEST_LOG_DAYS` is dropped whole, and each day's partition is made
before its first row arrives (apps/request_log/partitions.py). On SQLite it is one table and a
daily delete. Rows are written by the usage flush and the Redis mover, never by a request.
"""

from django.db import models

from apps.metering.records import COLUMN_LIMITS


class RequestLogEntry(models.Model):
    """One request: who (key, workspace), by which door, what (method, path, operation), how
    it ended (status, error code, duration), from where (client address, user agent), and the
    `Request-Id` its answer carried. Never a body, another header, or a secret."""

    class Door(models.TextChoices):
        API = "api", "API"
        MCP = "mcp", "MCP"

    at = models.DateTimeField()
    key_id = models.BigIntegerField()
    workspace_id = models.UUIDField()
    door = models.CharField(max_length=3, choices=Door.choices)
    method = models.CharField(max_length=COLUMN_LIMITS["method"])
    path = models.CharField(max_length=COLUMN_LIMITS["path"])
    operation = models.CharField(max_length=COLUMN_LIMITS["operation"])
    status = models.SmallIntegerField()
    error = models.CharField(max_length=COLUMN_LIMITS["error"], blank=True)
    # None: the answer was never recorded (the app process was killed while answering).
    duration_ms = models.FloatField(null=True)
    client_ip = models.GenericIPAddressField(null=True)
    user_agent = models.CharField(max_length=COLUMN_LIMITS["user_agent"], blank=True)
    request_id = models.CharField(max_length=COLUMN_LIMITS["request_id"])
    # The object the request created or acted on: the id in its path, or the created record's.
    object_id = models.CharField(max_length=COLUMN_LIMITS["object_id"], blank=True)

    class Meta:
        db_table = "request_log"
        indexes = [
            models.Index(fields=["key_id", "-at"], name="request_log_key_at"),
            models.Index(fields=["workspace_id", "-at"], name="request_log_workspace_at"),
            # Logs filtered by a status class: a rare class is found without reading the rest.
            models.Index(
                fields=["workspace_id", "status", "-at"], name="request_log_workspace_status"
            ),
            models.Index(fields=["request_id"], name="request_log_request_id"),
        ]

    def __str__(self) -> str:
        return f"{self.request_id} {self.method} {self.path} {self.status}"

    @property
    def outcome(self) -> str:
        """`success` (below 400), `refused` (401, 403, 429), `error` (any other 4xx or 5xx)."""
        if self.status < 400:
            return "success"
        return "refused" if self.status in (401, 403, 429) else "error"


class RequestLogMove(models.Model):
    """A batch of the request log moved from Redis, written in the transaction of its rows: a
    batch a mover died with is moved again only if this row is missing."""

    batch = models.CharField(max_length=64, primary_key=True)
    moved_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return self.batch
