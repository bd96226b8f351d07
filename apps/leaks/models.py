from django.db import models
from django.utils import timezone


class SecretScanningKeySet(models.Model):
    """The last good copy of GitHub's secret-scanning public keys, fetched by
    `manage.py refreshsecretscanningkeys`; one row, shared by every app server."""

    body = models.TextField()  # GitHub's JSON, as fetched
    fetched_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "api_keys_secretscanningkeyset"  # made by api_keys before this app stood alone

    def __str__(self) -> str:
        return f"GitHub secret-scanning keys of {self.fetched_at:%Y-%m-%d %H:%M}"
