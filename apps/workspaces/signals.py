"""Facts the tenant core publishes for the apps above it to act on, without naming them."""

from typing import Any

from django.dispatch import Signal

# Someone lost a place in a workspace: removed from the team, or from a community of it.
# Sent inside the transaction of the removal with `workspace`, `user` and `actor` (an audit
# Actor); receivers write in that same transaction, so the removal and its consequences are
# committed together or not at all.
place_removed = Signal()

# A person's keys in a workspace must stop: they left the team (every key of theirs there), or
# their last community of it (their member keys, `member_keys_only`). Sent inside the removal's
# transaction with `workspace`, `user`, `actor` and `member_keys_only`; each receiver answers
# how many keys it revoked.
holder_removed = Signal()

# A person's keys in a workspace must pause (`holder_suspended`: the identity provider
# suspended them there) or go on (`holder_restored`). Sent inside the change's transaction with
# `workspace`, `user` and `at`; each receiver answers how many keys it changed.
holder_suspended = Signal()
holder_restored = Signal()


def keys_changed_by(signal: Signal, **facts: Any) -> int:
    """Send `signal` and add up how many keys the receivers changed."""
    return sum(int(count or 0) for _, count in signal.send(sender=None, **facts))


def revoke_keys_of_removed(**facts: Any) -> int:
    """Send `holder_removed` and add up how many keys the receivers revoked."""
    answers = holder_removed.send(sender=None, **facts)
    return sum(int(count or 0) for _, count in answers)
