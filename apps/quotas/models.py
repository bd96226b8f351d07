"""What PostgreSQL knows of a quota's period: how much was used and how much owners added."""

from django.db import models


class QuotaCounter(models.Model):
    """One period of one quota (`scope`: "k12" for key 12's own).

    `used` is the most that is known to have been used: Redis's count copied here every few
    seconds (never lowered by the copy), or the count itself while Redis is out of reach.
    `credit` is what owners added (a top-up, or a "set" of what is left). What is left is
    requests + credit - used; Redis holds used - credit, the period's net use.
    """

    scope = models.CharField(max_length=24)
    period_start = models.DateTimeField()
    used = models.BigIntegerField(default=0)
    credit = models.BigIntegerField(default=0)
    # Of `used`, what was counted here while Redis was away and not yet added to Redis's count.
    offline = models.BigIntegerField(default=0)
    warned = models.CharField(max_length=8, blank=True, default="")  # "80", "100": told once

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "period_start"], name="one_counter_a_period")
        ]

    def __str__(self) -> str:
        return f"{self.scope} from {self.period_start:%Y-%m-%d %H:%M}: {self.used} used"
