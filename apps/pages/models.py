from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace


class Page(models.Model):
    """A custom hosted page of a workspace's storefront."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="pages")
    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    body = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "slug"], name="one_slug_per_workspace")
        ]

    def __str__(self) -> str:
        return self.title
