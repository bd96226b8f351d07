"""The writes a task hands to the worker (`after_task`): under `manage.py worker` they run in
the transaction that records the task as done (apps/jobs/batching.py), elsewhere at once."""

from collections.abc import Callable
from contextvars import ContextVar

from django.db import transaction

# The running task's writes, in the thread that runs it (a context of its own per thread).
_writes: ContextVar[list[Callable[[], object]] | None] = ContextVar("task_writes", default=None)


def after_task(write: Callable[[], object]) -> None:
    """Run `write` (database writes only) in the transaction that records the running task as
    done, under `manage.py worker`; elsewhere (another worker, no task) at once, in a transaction
    of its own. Its rows are not visible before the task's result is written.

    Under the worker it runs again whenever that transaction did not commit (a backend
    terminated, another task's write failed): it must set afresh whatever it writes, and not
    trust what an earlier run left on its objects (a primary key whose INSERT was rolled back)."""
    pending = _writes.get()
    if pending is None:
        with transaction.atomic():
            write()
    else:
        pending.append(write)
