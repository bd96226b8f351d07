from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from apps.api.scopes import summarize_scopes
from apps.common.quota_periods import PERIODS, Quota
from apps.workspaces.models import Workspace

# The model field that holds each restrictable group's chosen ids, and when a scope not
# exercised counts as unused: their module is evidence.py, importers find them here too.
from .evidence import RESTRICTED_FIELD as RESTRICTED_FIELD
from .evidence import UNUSED_AFTER as UNUSED_AFTER
from .evidence import UseEvidence
from .policy import key_policy_problem
from .restrictions import Restrictions

# The states live in their own module; importers of the model find them here too.
from .states import WAITING as WAITING
from .states import ApiKeyState as ApiKeyState
from .states import current_condition, state_condition


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def in_state(self, state: str, now: datetime | None = None) -> "ApiKeyQuerySet":
        return self.filter(state_condition(state, now or timezone.now()))

    def current(self, now: datetime | None = None) -> "ApiKeyQuerySet":
        return self.filter(current_condition(now or timezone.now()))


class ApiKey(UseEvidence, models.Model):
    """A bearer credential. Only the keyed hash of its secret is stored, never the secret."""

    class Kind(models.TextChoices):
        WORKSPACE = "workspace", "Workspace key"
        MEMBER = "member", "Member key"

    class Tag(models.TextChoices):
        NONE = "", "None"
        CLI = "cli", "CLI"
        MCP = "mcp", "MCP"  # issued to a connected app by OAuth: an hour at a time

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    # The user the key belongs to and acts as; each user creates keys only for themself.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.WORKSPACE)
    name = models.CharField(max_length=100)
    description = models.TextField(max_length=500, blank=True, default="")
    scopes = models.JSONField(default=list)
    # Unique through Meta.constraints rather than unique=True: on PostgreSQL that keeps Django
    # from adding a second, LIKE-ready index that the planner would have to weigh on every request.
    secret_hash = models.CharField(max_length=64)
    hint = models.CharField(max_length=16)
    tag = models.CharField(max_length=8, choices=Tag.choices, default=Tag.NONE, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(null=True, blank=True)
    # When each scope was last exercised ({scope: ISO time}), written at most once a minute per
    # scope, like last_used_at: the evidence for narrowing a key to what it really uses.
    scope_last_used = models.JSONField(default=dict, blank=True)
    # Rolling: the secret before the last roll keeps working until previous_secret_expires_at.
    rolled_at = models.DateTimeField(null=True, blank=True)
    previous_secret_hash = models.CharField(max_length=64, null=True, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # When the replaced secret last made a call (at most once a minute), so an owner sees when
    # nothing uses it any more and the grace can safely end.
    previous_secret_last_used_at = models.DateTimeField(null=True, blank=True)
    # Restrictions (docs/product.md §2): per group the chosen objects' ids, or null for all of
    # the group; the allowed networks (CIDR strings, empty for any); the key's own rate limit.
    # They ride on the row the lookup reads, so checking them costs no query.
    community_ids = models.JSONField(null=True, blank=True)
    page_ids = models.JSONField(null=True, blank=True)
    product_ids = models.JSONField(null=True, blank=True)
    allowed_networks = models.JSONField(default=list, blank=True)
    rate_limit_per_minute = models.PositiveIntegerField(null=True, blank=True)
    # Its quota (docs/product.md §17): requests a period from its creation; null for none.
    quota_requests = models.PositiveIntegerField(null=True, blank=True)
    quota_period = models.CharField(max_length=8, blank=True, default="")
    # A service account's key drawing from its account's one allowance (the quota above).
    quota_shared = models.BooleanField(default=False)
    # When each chosen object was last reached ({"communities:12": ISO time}), at most once a
    # minute each: the evidence for dropping a chosen object nobody uses.
    object_last_used = models.JSONField(default=dict, blank=True)
    # CLI keys: the `gatehouse` installation that logged in; each has one live key at most.
    installation_id = models.CharField(max_length=64, null=True, blank=True)
    # Approval (docs/product.md §10): a key the workspace's policy covers is created waiting
    # (approval_requested_at set) and works only once approved; denied, it never does. The
    # states pending and denied are derived from these, as expired and revoked are.
    approval_requested_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    denied_at = models.DateTimeField(null=True, blank=True)
    denied_by = models.ForeignKey(  # null with denied_at set: denied by the schedule
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    denial_reason = models.CharField(max_length=500, blank=True, default="")
    # Its holder was suspended by the workspace's identity provider (docs/product.md §16): the
    # key answers `suspended-key` until the holder is restored, which clears this. On the row
    # the lookup reads, so the check costs no query.
    suspended_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()
    called_with_previous_secret = False  # never stored: this request presented a rolled secret

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["workspace", "-created_at"], name="api_key_ws_created"),
            models.Index(fields=["previous_secret_hash"], name="api_key_previous_hash"),
            # The owners' waiting list: a handful of rows, found without reading the rest.
            models.Index(
                fields=["workspace", "approval_requested_at"],
                condition=WAITING,
                name="api_key_waiting",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["secret_hash"], name="api_key_secret_hash_unique"),
            # What the services assume, held by the database too.
            models.CheckConstraint(
                condition=Q(expires_at__isnull=True) | Q(expires_at__gt=F("created_at")),
                name="api_key_expires_after_creation",
            ),
            models.CheckConstraint(condition=~Q(scopes=[]), name="api_key_holds_a_scope"),
            models.CheckConstraint(
                condition=Q(rate_limit_per_minute__isnull=True)
                | Q(rate_limit_per_minute__gte=1, rate_limit_per_minute__lte=100_000),
                name="api_key_rate_limit_in_range",
            ),
            models.CheckConstraint(
                condition=Q(quota_requests__isnull=True, quota_period="")
                | Q(quota_requests__gte=1, quota_period__in=PERIODS),
                name="api_key_quota_whole",
            ),
            models.UniqueConstraint(
                fields=["workspace", "user", "installation_id"],
                condition=Q(revoked_at__isnull=True, installation_id__isnull=False),
                name="one_live_cli_key_per_installation",
            ),
            # A decision answers a request, and a key gets one decision at most.
            models.CheckConstraint(
                condition=Q(approval_requested_at__isnull=False)
                | Q(approved_at__isnull=True, denied_at__isnull=True),
                name="api_key_decision_needs_request",
            ),
            models.CheckConstraint(
                condition=Q(approved_at__isnull=True) | Q(denied_at__isnull=True),
                name="api_key_one_decision",
            ),
            models.CheckConstraint(
                condition=Q(denied_at__isnull=False) | Q(denial_reason=""),
                name="api_key_reason_only_when_denied",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint})"

    def state_at(self, now: datetime) -> str:
        """The key's state at `now`: revoked and denied are final, an expiry ends a wait too."""
        if self.revoked_at is not None:
            return ApiKeyState.REVOKED
        if self.denied_at is not None:
            return ApiKeyState.DENIED
        if self.expires_at is not None and now >= self.expires_at:
            return ApiKeyState.EXPIRED
        if self.suspended_at is not None:
            return ApiKeyState.SUSPENDED
        if self.approval_requested_at is not None and self.approved_at is None:
            return ApiKeyState.PENDING
        return ApiKeyState.ACTIVE

    @property
    def state(self) -> str:
        return self.state_at(timezone.now())

    @property
    def live(self) -> bool:
        """Whether the key works, waits to work once approved, or waits for its holder's
        restoration: what can still be revoked, renamed or narrowed."""
        return self.state in (ApiKeyState.ACTIVE, ApiKeyState.PENDING, ApiKeyState.SUSPENDED)

    @property
    def restrictions(self) -> Restrictions:
        def ids(value: list[int] | None) -> tuple[int, ...] | None:
            return None if value is None else tuple(value)

        return Restrictions(
            communities=ids(self.community_ids),
            pages=ids(self.page_ids),
            products=ids(self.product_ids),
            networks=tuple(self.allowed_networks or ()),
            rate_limit_per_minute=self.rate_limit_per_minute,
        )

    def set_restrictions(self, restrictions: Restrictions) -> list[str]:
        """Store `restrictions` on the instance; returns the fields to save."""
        for group, ids in restrictions.chosen.items():
            setattr(self, RESTRICTED_FIELD[group], None if ids is None else list(ids))
        self.allowed_networks = list(restrictions.networks)
        self.rate_limit_per_minute = restrictions.rate_limit_per_minute
        return [*RESTRICTED_FIELD.values(), "allowed_networks", "rate_limit_per_minute"]

    @property
    def quota(self) -> Quota | None:
        return Quota(self.quota_requests, self.quota_period) if self.quota_requests else None

    @property
    def quota_json(self) -> dict[str, object] | None:
        return self.quota.as_json() if self.quota else None

    @property
    def outside_policy(self) -> str | None:
        """Why this active key is outside its workspace's current key policy, or None."""
        if self.state != ApiKeyState.ACTIVE:
            return None
        return key_policy_problem(
            self.workspace, self.expires_at, now=timezone.now(), created_at=self.created_at
        )

    @property
    def permission_summary(self) -> str:
        """The scopes as people read them (see `scopes.summarize_scopes`)."""
        return summarize_scopes(self.scopes)

    @property
    def expiring_soon(self) -> bool:
        """Active and expiring within 7 days (the list's "Expiring" badge)."""
        now = timezone.now()
        return (
            self.state_at(now) == ApiKeyState.ACTIVE
            and self.expires_at is not None
            and self.expires_at - now <= timedelta(days=7)
        )

    def rolling_at(self, now: datetime) -> bool:
        """Whether the secret before the last roll still works at `now`."""
        until = self.previous_secret_expires_at
        return self.previous_secret_hash is not None and until is not None and now < until

    @property
    def rolling(self) -> bool:
        return self.state == ApiKeyState.ACTIVE and self.rolling_at(timezone.now())

    @property
    def is_cli(self) -> bool:
        return self.tag == self.Tag.CLI
