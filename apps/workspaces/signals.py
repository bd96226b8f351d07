"""Facts the tenant core publishes for the apps above it to act on, without naming them."""

from django.dispatch import Signal

# Someone lost a place in a workspace: removed from the team, or from a community of it.
# Sent inside the transaction of the removal with `workspace`, `user` and `actor` (an audit
# Actor); receivers write in that same transaction, so the removal and its consequences are
# committed together or not at all.
place_removed = Signal()
