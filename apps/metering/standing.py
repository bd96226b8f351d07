"""A request's standing in its key's rate-limit bucket and quota: the IETF RateLimit fields
(draft-ietf-httpapi-ratelimit-headers-10) every answer of a counted key carries, and the
refusal's Retry-After."""

import math
from dataclasses import dataclass, replace

from .quotas import QuotaState

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class RateLimitState:
    """One request's standing in its bucket (a `limit` of 0: limits are off) and quota."""

    limit: int
    remaining: int
    reset_seconds: int  # until the bucket is full again (or, when refused, until the next token)
    retry_after: int | None = None  # set when the bucket refuses the request
    blocked: bool = False  # refused because the client's address is blocked (shared, Redis)
    counted: bool = False  # the request was counted and logged in Redis by this call (`note`)
    unsettled: bool = False  # its call to Redis failed and may have run: settled by its mark
    quota: QuotaState | None = None  # the key's quota, when it has one

    @property
    def refused(self) -> bool:
        return self.retry_after is not None or self.quota_spent

    @property
    def quota_spent(self) -> bool:
        return self.quota is not None and self.quota.refused

    def unsettle(self, unsettled: bool) -> "RateLimitState":
        return replace(self, unsettled=unsettled)

    def with_quota(self, quota: QuotaState | None) -> "RateLimitState":
        return replace(self, quota=quota)

    def headers(self) -> dict[str, str]:
        """The IETF fields, the quota beside the rate limit, plus Retry-After on a refusal
        (until the refill for a spent quota; none for a one-off allowance)."""
        policies, items = [], []
        if self.limit > 0:
            policies.append(f'"default";q={self.limit};w={WINDOW_SECONDS}')
            items.append(f'"default";r={self.remaining};t={self.reset_seconds}')
        if self.quota is not None:
            policies.append(self.quota.policy_item())
            items.append(self.quota.item())
        fields = {"RateLimit-Policy": ", ".join(policies), "RateLimit": ", ".join(items)}
        if self.retry_after is not None:
            fields["Retry-After"] = str(self.retry_after)
        elif self.quota_spent and self.quota and self.quota.reset_seconds is not None:
            fields["Retry-After"] = str(max(1, self.quota.reset_seconds))
        return fields


def bucket_state(
    limit: int, interval: float, now: float, tat: float, allowed: bool, counted: bool = False
) -> RateLimitState:
    """The standing of a request in a bucket whose arrival time is now `tat`."""
    if limit <= 0:
        return RateLimitState(0, 0, 0, counted=counted)
    if not allowed:
        retry_after = max(1, math.ceil(tat + interval - WINDOW_SECONDS - now))
        return RateLimitState(limit, 0, retry_after, retry_after, counted=counted)
    remaining = int((WINDOW_SECONDS - (tat - now)) / interval + 1e-9)
    return RateLimitState(
        limit, max(0, min(limit, remaining)), max(0, math.ceil(tat - now)), counted=counted
    )
