"""Requests per key, hour and day, by operation and outcome; and the networks each key was used
from. Written by the usage flush (apps/metering/buffer.py), never by a request."""

from django.db import models
from django.utils import timezone

from apps.api_keys.models import ApiKey

# Outcomes as requests are counted: the refusals a key can earn by name, the rest by class.
OUTCOMES = ("2xx", "4xx", "5xx", "401", "403", "429")


class KeyUsageHour(models.Model):
    """How many requests a key made in one hour, for one operation with one outcome."""

    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+")
    hour = models.DateTimeField()  # the hour's start, UTC
    operation = models.CharField(max_length=64)
    outcome = models.CharField(max_length=8)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["key", "hour", "operation", "outcome"], name="one_usage_row_per_hour"
            )
        ]
        indexes = [models.Index(fields=["hour"], name="usage_hour")]

    def __str__(self) -> str:
        return f"{self.key_id} {self.hour:%Y-%m-%d %H}h {self.operation} {self.outcome}"


class KeyUsageDay(models.Model):
    """The same, per UTC day: kept 13 months, where hours are kept 90 days."""

    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    operation = models.CharField(max_length=64)
    outcome = models.CharField(max_length=8)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["key", "day", "operation", "outcome"], name="one_usage_row_per_day"
            )
        ]
        indexes = [models.Index(fields=["day"], name="usage_day")]

    def __str__(self) -> str:
        return f"{self.key_id} {self.day} {self.operation} {self.outcome}"


class KeyNetwork(models.Model):
    """A network (IPv4 /24, IPv6 /64) a key was used from, and when."""

    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+")
    network = models.CharField(max_length=50)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)
    last_address = models.GenericIPAddressField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "network"], name="one_row_per_key_network")
        ]

    def __str__(self) -> str:
        return f"{self.key_id} {self.network}"


class UsageMove(models.Model):
    """A batch of counts moved from Redis to the hourly rows, written in the transaction of its
    counts: a batch a mover died with is moved again only if this row is missing."""

    batch = models.CharField(max_length=64, primary_key=True)
    moved_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return self.batch
