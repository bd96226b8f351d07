from django.db import models
from django.utils import timezone

from apps.api_keys.models import ApiKey


class IdleWarning(models.Model):
    """The warning that a key will be revoked as idle in 7 days, sent once per idle spell: the
    spell is named by the key's last use (or creation) the warning was counted from, so a key
    used after its warning and idle again later is warned again."""

    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="idle_warnings")
    idle_since = models.DateTimeField()
    sent_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "idle_since"], name="one_idle_warning_a_spell")
        ]

    def __str__(self) -> str:
        return f"Idle warning for {self.key} (idle since {self.idle_since:%Y-%m-%d})"
