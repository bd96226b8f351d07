"""Tasks that wait on the network run side by side (issue 53): a webhook's POST may take up to
10 s, and one at a time per worker 1,000 events to a receiver that answers in 30 ms took 40 s,
and a receiver that times out held every other workspace's deliveries behind it.

An app names such a task with `run_alongside(task, key)`: `key` reads, from the task's
arguments, what it waits on (a webhook endpoint). The batching worker then runs those tasks of
a batch in up to `TASK_THREADS` threads, at most `TASK_THREADS_PER_KEY` at once for one key, so
one slow endpoint holds a few threads and never the others. Everything else is unchanged: each
thread's task uses a database connection of its own (closed when the task ends), its result
and its `after_task` writes wait for the worker's next write as a task's always do, and the
batch's results are written once all of its tasks are done."""

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connections

KeyOf = Callable[[list[Any], dict[str, Any]], str]
_ALONGSIDE: dict[str, KeyOf] = {}  # a task's path → what it waits on, read from its arguments


def run_alongside(task: Any, key: KeyOf) -> None:
    """Let the worker run `task` in a thread beside others; `key(args, kwargs)` names what it
    waits on, which at most `TASK_THREADS_PER_KEY` tasks wait on at once."""
    _ALONGSIDE[task.module_path] = key


class Alongside:
    """One batch's tasks that run in threads, and waiting for them."""

    def __init__(self, run_task: Callable[[Any], None]) -> None:
        self.run_task = run_task  # the worker's: runs a claimed row, keeps its result
        self.pool = ThreadPoolExecutor(settings.TASK_THREADS, thread_name_prefix="task")
        per_key = settings.TASK_THREADS_PER_KEY
        self.limits: defaultdict[str, threading.BoundedSemaphore] = defaultdict(
            lambda: threading.BoundedSemaphore(per_key)
        )
        self.futures: list[Future[None]] = []
        self.started = time.monotonic()

    @staticmethod
    def enabled() -> bool:
        return settings.TASK_THREADS > 1 and bool(_ALONGSIDE)

    def takes(self, row: Any) -> bool:
        return row.task_path in _ALONGSIDE

    def submit(self, row: Any) -> None:
        result = row.task_result
        key = _ALONGSIDE[row.task_path](list(result.args), dict(result.kwargs))
        self.futures.append(self.pool.submit(self._run, row, self.limits[key]))

    def _run(self, row: Any, limit: threading.BoundedSemaphore) -> None:
        with limit:
            try:
                self.run_task(row)
            finally:
                connections.close_all()  # this thread's own: never left open between batches

    def wait(self) -> float | None:
        """Wait for every task submitted; then raise the first error a task raised (a database
        gone, which the worker's own loop answers), if any. The seconds a task took, on
        average over the batch's wall time (None: none ran here)."""
        errors = []
        for future in self.futures:
            try:
                future.result()
            except BaseException as error:
                errors.append(error)
        self.pool.shutdown()
        if errors:
            raise errors[0]
        return (time.monotonic() - self.started) / len(self.futures) if self.futures else None
