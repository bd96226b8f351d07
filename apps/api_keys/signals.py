"""Facts of the key's core that apps above it act on (docs/architecture.md: a lower app
publishes, a higher one subscribes in its `AppConfig.ready()`)."""

from django.dispatch import Signal

# A key was created waiting for an owner's approval (docs/product.md §10); sent with `key` and
# `actor` inside the key's creating transaction.
key_waiting = Signal()
