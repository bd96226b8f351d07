from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.workspaces.models import Membership, Workspace


class Invitation(models.Model):
    """An offer, e-mailed to one address, of a place on a workspace's team or in a community.

    Nothing is granted until the person who controls that address accepts it: the link carries
    a random token stored here only as a keyed hash; it works once and until `expires_at`.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        WITHDRAWN = "withdrawn", "Withdrawn"
        EXPIRED = "expired", "Expired"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=8, choices=Membership.Role.choices)
    # Set for an invitation to a community (role member); empty for the team (owner or admin).
    community = models.ForeignKey(
        "communities.Community",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="invitations",
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-sent_at", "-id"]
        indexes = [models.Index(fields=["workspace", "email"], name="invitation_ws_email")]

    def __str__(self) -> str:
        return f"{self.email} to {self.community or self.workspace} ({self.state})"

    @property
    def state(self) -> str:
        if self.accepted_at:
            return self.State.ACCEPTED
        if self.withdrawn_at:
            return self.State.WITHDRAWN
        if self.expires_at <= timezone.now():
            return self.State.EXPIRED
        return self.State.PENDING

    @property
    def place(self) -> str:
        """What accepting makes you, to follow "to be" or "You are now": "an admin of Acme",
        "an owner of Acme" or "a member of the community Makers in Acme"."""
        if self.community is not None:
            return f"a member of the community {self.community.name} in {self.workspace.name}"
        role = self.get_role_display().lower()
        article = "an" if role[:1] in "aeiou" else "a"
        return f"{article} {role} of {self.workspace.name}"
