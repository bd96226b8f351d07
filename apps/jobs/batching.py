"""Tasks run in batches (`manage.py worker`): a worker claims several due tasks in one
transaction, runs them one after the other, and writes their results in the transaction of its
next claim; a task may hand its last writes to that transaction (`task_writes.after_task`).

As with django-tasks-db's own worker, each task runs on one worker (rows taken with SELECT ...
FOR UPDATE SKIP LOCKED, marked RUNNING with the worker's id), a task left RUNNING by a worker
that died goes back to the queue (`workers.tasks_recover`), a task that raises is FAILED with
its traceback. What differs: results are written up to HOLD_SECONDS after their task ended (a
worker killed meanwhile has those tasks run again, as a task killed in its middle), and a
worker holds only what it expects to run in HOLD_SECONDS, giving the rest back when slow."""

import json
import logging
import random
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from traceback import format_exception
from typing import TYPE_CHECKING, Any

from django.db import OperationalError, close_old_connections
from django.utils import timezone
from django_tasks_db.compat import TaskContext, TaskResultStatus, task_finished, task_started
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult
from django_tasks_db.utils import exclusive_transaction, is_locked_database_exception

from apps.common.metrics import instruments
from apps.common.retry import connection_lost

from .alongside import Alongside
from .task_writes import _writes

if TYPE_CHECKING:
    Row = DBTaskResult[..., Any]
else:
    Row = DBTaskResult

logger = logging.getLogger("apps.jobs")

CLAIM_AT_MOST = 50
RESULT_FIELDS = ["finished_at", "status", "return_value", "exception_class_path", "traceback"]
HOLD_SECONDS = 0.5


@dataclass
class _Done:
    row: Row  # its result fields set, not yet saved; worker_ids as claimed
    writes: list[Callable[[], object]] = field(default_factory=list)


def _mark(row: Row, return_value: Any = None, error: BaseException | None = None) -> None:
    """Set the result fields as DBTaskResult.set_successful/set_failed do, without saving."""
    row.return_value = return_value if error is None else None
    row.status = TaskResultStatus.SUCCESSFUL if error is None else TaskResultStatus.FAILED
    row.exception_class_path = (
        f"{type(error).__module__}.{type(error).__qualname__}" if error else ""
    )
    row.traceback = "".join(format_exception(error)) if error else ""


class BatchingWorker(db_worker.Worker):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.claimed: list[Row] = []  # claimed and not started
        self.interrupted: list[Row] = []  # stopped by the database going away: run again
        self.done: list[_Done] = []  # run, result not yet written
        self.busy = False  # holding tasks: a signal stops it after the task at hand
        self.unsure = False  # the last write's transaction failed: did its COMMIT land?
        self.task_seconds = 0.1  # running mean of a task's duration; small first claims
        self.lock = threading.Lock()

    def shutdown(self, signum: int, frame: Any) -> None:
        if self.running and self.busy:
            db_worker.logger.warning(
                "Received %s - shutting down gracefully... (press Ctrl+C again to force)",
                signal.strsignal(signum),
            )
            self.running = False  # the batch stops: done written, the rest given back
            return
        super().shutdown(signum, frame)

    def claim_size(self) -> int:
        size = max(1, min(CLAIM_AT_MOST, int(HOLD_SECONDS / max(self.task_seconds, 1e-3))))
        if self.max_tasks is not None:
            size = min(size, self.max_tasks - self._run_tasks)
        return max(size, 0) if self.running else 0

    def run(self) -> None:
        db_worker.logger.info(
            "Starting worker worker_id=%s queues=%s", self.worker_id, ",".join(self.queue_names)
        )
        if self.startup_delay and self.interval:
            time.sleep(random.random())  # noqa: S311 - no thundering herd
        while True:
            close_old_connections()
            self.busy = True
            claimed = self.write_and_claim(self.claim_size())
            if claimed:
                self.run_batch()
                continue
            self.busy = bool(self.done or self.claimed or self.interrupted)
            if not self.running or (self.batch and claimed is not None):
                return
            if self.max_tasks is not None and self._run_tasks >= self.max_tasks:
                return
            time.sleep(self.interval)

    def run_batch(self) -> None:
        started = time.monotonic()
        # Tasks that wait on the network run in threads beside the rest (apps/jobs/alongside.py).
        alongside = Alongside(self.run_task) if Alongside.enabled() else None
        try:
            while self.claimed and self.running:
                if self.done and time.monotonic() - started > HOLD_SECONDS:
                    return  # a slow batch: the rest goes back to the queue with these results
                row = self.claimed.pop(0)
                if alongside is not None and alongside.takes(row):
                    alongside.submit(row)
                    continue
                began = time.monotonic()
                self.run_task(row)
                self.task_seconds = 0.8 * self.task_seconds + 0.2 * (time.monotonic() - began)
        finally:
            if alongside is not None and (each := alongside.wait()) is not None:
                self.task_seconds = 0.8 * self.task_seconds + 0.2 * each

    def run_task(self, db_task_result: Row) -> None:
        """Run a claimed task; its result (and its `after_task` writes) wait for the next
        write."""
        row = db_task_result
        writes: list[Callable[[], object]] = []
        token = _writes.set(writes)
        self.running_task = True
        try:
            task, task_result = row.task, row.task_result
            sender = type(task.get_backend())
            task_started.send(sender=sender, task_result=task_result)
            context = [TaskContext(task_result=task_result)] if task.takes_context else []
            value = task.call(*context, *task_result.args, **task_result.kwargs)
            json.dumps(value, cls=DBTaskResult._meta.get_field("return_value").encoder)
            _mark(row, value)
            task_finished.send(sender=sender, task_result=row.task_result)
        except BaseException as error:
            if self.run_again(row, error):
                logger.warning("Task %s failed for the database; it is queued again.", row.pk)
                self.interrupted.append(row)  # given back at the next write
                raise
            _mark(row, error=error)
            try:
                sender = type(row.task.get_backend())
                task_finished.send(sender=sender, task_result=row.task_result)
            except Exception:
                logger.exception("Task id=%s failed unexpectedly", row.pk)
        finally:
            _writes.reset(token)
            self.running_task = False
        with self.lock:  # tasks run alongside finish in threads of their own
            self._run_tasks += 1
            self.done.append(_Done(row, writes))
        outcome = "done" if row.status == TaskResultStatus.SUCCESSFUL else "failed"
        instruments().tasks.labels(row.task_path, outcome).inc()

    def run_again(self, db_task_result: Row, error: BaseException) -> bool:
        """Whether a task that raised `error` goes back to the queue rather than FAILED (then
        the error ends the batch): never here, as in django-tasks-db's worker."""
        return False

    def write_and_claim(self, limit: int) -> list[Row] | None:
        """One transaction: the results of the tasks run since the last one, the tasks claimed
        and not started given back, and up to `limit` tasks claimed (None: the database was
        locked, nothing known)."""
        tasks = DBTaskResult.objects.ready().filter(backend_name=self.backend_name)
        if not self.process_all_queues:
            tasks = tasks.filter(queue_name__in=self.queue_names)
        if self.excluded_queue_names:
            tasks = tasks.exclude(queue_name__in=self.excluded_queue_names)
        unsure, self.unsure = self.unsure, True  # until this transaction's answer is known
        try:
            with exclusive_transaction(tasks.db):
                if unsure:
                    self.give_back_lost()
                self.write(self.done)
                self.give_back(self.claimed, attempted=False)
                self.give_back(self.interrupted, attempted=True)
                rows = list(tasks.select_for_update(skip_locked=True)[:limit]) if limit else []
                self.claim(rows)
        except Exception as error:
            if isinstance(error, OperationalError) and is_locked_database_exception(error):
                self.unsure = unsure
                return None
            if connection_lost(error) or not self.done:
                raise
            # A task's writes failed (at once, or at COMMIT: a deferred foreign key): each task
            # alone, so that only that one fails.
            for item in self.done:
                self.write_alone(item)
            self.done, self.unsure = [], unsure
            return self.write_and_claim(limit)
        self.done, self.interrupted, self.claimed, self.unsure = [], [], rows, False
        return rows

    def write(self, done: list[_Done]) -> None:
        """The results of `done` that are still this worker's (not taken back meanwhile, nor
        written by a COMMIT whose answer was lost), each task's writes after them."""
        if not done:
            return
        now = timezone.now()  # finished_at: when written, as started_at is when claimed
        rows = {item.row.pk: item.row for item in done}
        held = DBTaskResult.objects.select_for_update().filter(
            pk__in=list(rows), status=TaskResultStatus.RUNNING
        )
        ours = {
            pk
            for pk, workers in held.values_list("pk", "worker_ids")
            if workers == rows[pk].worker_ids
        }
        # One UPDATE for each distinct result: one for a batch that went well.
        same: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
        for pk in ours:
            row = rows[pk]
            row.finished_at = now
            result = (row.status, json.dumps(row.return_value), row.exception_class_path)
            same[(*result, row.traceback)].append(pk)
        for pks in same.values():
            first = rows[pks[0]]
            DBTaskResult.objects.filter(pk__in=pks).update(
                **{name: getattr(first, name) for name in RESULT_FIELDS}
            )
        for item in done:
            for write in item.writes if item.row.pk in ours else []:
                write()

    def write_alone(self, item: _Done) -> None:
        """A task's result and writes in a transaction of their own; if the writes fail, the
        task is FAILED with their error, and they are dropped."""
        try:
            with exclusive_transaction(DBTaskResult.objects.db):
                self.write([item])
        except Exception as error:
            if connection_lost(error):
                raise
            logger.exception("The writes of task %s failed; it is marked failed.", item.row.pk)
            _mark(item.row, error=error)
            with exclusive_transaction(DBTaskResult.objects.db):
                self.write([_Done(item.row)])

    def give_back_lost(self) -> None:
        """After a transaction whose answer was lost (a backend terminated mid-COMMIT): the
        tasks it claimed for this worker, which never learnt of them, go back to the queue
        (the lease would not take them from a live worker)."""
        held = {row.pk for row in [*self.claimed, *self.interrupted, *(d.row for d in self.done)]}
        running = DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING)
        lost = [
            row
            for row in running.only("pk", "worker_ids")[:1000]
            if row.worker_ids[-1:] == [self.worker_id] and row.pk not in held
        ]
        self.give_back(lost, attempted=False)

    def give_back(self, rows: list[Row], attempted: bool) -> None:
        """Queue `rows` again; one never started does not count as an attempt."""
        for row in rows:
            DBTaskResult.objects.filter(
                pk=row.pk, status=TaskResultStatus.RUNNING, worker_ids=row.worker_ids
            ).update(
                status=TaskResultStatus.READY,
                started_at=None,
                worker_ids=row.worker_ids if attempted else row.worker_ids[:-1],
            )

    def claim(self, rows: list[Row]) -> None:
        """Mark `rows` RUNNING on this worker: one UPDATE per earlier list of workers."""
        now = timezone.now()
        by_workers: dict[tuple[str, ...], list[Row]] = defaultdict(list)
        for row in rows:
            by_workers[tuple(row.worker_ids)].append(row)
        for earlier, same in by_workers.items():
            worker_ids = [*earlier, self.worker_id]
            DBTaskResult.objects.filter(pk__in=[row.pk for row in same]).update(
                status=TaskResultStatus.RUNNING, started_at=now, worker_ids=worker_ids
            )
            for row in same:
                row.status, row.started_at = TaskResultStatus.RUNNING, now
                row.worker_ids = worker_ids
