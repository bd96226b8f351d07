from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace


class Product(models.Model):
    """Something a workspace sells; minimal, to give the products scopes a real operation."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="products")
    name = models.CharField(max_length=200)
    price_cents = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name
