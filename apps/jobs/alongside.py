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
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections

if TYPE_CHECKING:
    from .batching import BatchingWorker, Row

KeyOf = Callable[[list[Any], dict[str, Any]], str]
_ALONGSIDE: dict[str, KeyOf] = {}  # a task's path → what it waits on, read from its arguments


def run_alongside(task: Any, key: KeyOf) -> None:
    """Let the worker run `task` in a thread beside others; `key(args, kwargs)` names what it
    waits on, which at most `TASK_THREADS_PER_KEY` tasks wait on at once."""
    _ALONGSIDE[task.module_path] = key


class Alongside:
    """One batch's tasks that run in threads, and waiting for them."""

    def __init__(self, worker: "BatchingWorker") -> None:
        self.worker = worker
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

    def takes(self, row: "Row") -> bool:
        return row.task_path in _ALONGSIDE

    def submit(self, row: "Row") -> None:
        result = row.task_result
        key = _ALONGSIDE[row.task_path](list(result.args), dict(result.kwargs))
        self.futures.append(self.pool.submit(self._run, row, self.limits[key]))

    def _run(self, row: "Row", limit: threading.BoundedSemaphore) -> None:
        with limit:
            try:
                self.worker.run_task(row)
            finally:
                connections.close_all()  # this thread's own: never left open between batches

    def wait(self) -> None:
        """Wait for every task submitted; then the first error a task raised (a database gone,
        which the worker's own loop answers), if any."""
        errors = []
        for future in self.futures:
            try:
                future.result()
            except BaseException as error:
                errors.append(error)
        self.pool.shutdown()
        if self.futures:
            each = (time.monotonic() - self.started) / len(self.futures)
            self.worker.task_seconds = 0.8 * self.worker.task_seconds + 0.2 * each
        if errors:
            raise errors[0]
