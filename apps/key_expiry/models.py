from django.db import models
from django.utils import timezone

from apps.api_keys.models import ApiKey


class ExpiryNotice(models.Model):
    """A notice of a key's expiry: e-mailed to its holder 7 days and 1 day before (with a
    `key.expiring` event), and the `key.expired` event once it has; one of each kind per key."""

    class Kind(models.TextChoices):
        WEEK = "7d", "7 days before"
        DAY = "1d", "1 day before"
        EXPIRED = "0d", "Expired"

    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="expiry_notices")
    kind = models.CharField(max_length=2, choices=Kind.choices)
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "api_keys_expirynotice"  # made by api_keys before notices stood alone
        constraints = [models.UniqueConstraint(fields=["key", "kind"], name="one_notice_per_kind")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} notice for {self.key}"
