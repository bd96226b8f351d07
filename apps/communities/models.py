from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.workspaces.models import Workspace


class Community(models.Model):
    """A community of a workspace: members, their posts."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="communities")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="CommunityMembership", related_name="communities"
    )

    class Meta:
        ordering = ["name", "id"]
        verbose_name_plural = "communities"

    def __str__(self) -> str:
        return self.name


class CommunityMembership(models.Model):
    community = models.ForeignKey(Community, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="community_memberships"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["community", "user"], name="one_seat_per_member")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.community}"


class Post(models.Model):
    community = models.ForeignKey(Community, on_delete=models.CASCADE, related_name="posts")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="posts"
    )
    title = models.CharField(max_length=200)
    body = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.title
