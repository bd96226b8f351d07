import logging
import os
import threading
import time
from typing import Any

from django.core.management.base import BaseCommand
from django.db import (
    DatabaseError,
    InterfaceError,
    InternalError,
    OperationalError,
    close_old_connections,
    connections,
)
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands import db_worker

from apps.common.metrics import process_dead, process_started
from apps.jobs.batching import BatchingWorker
from apps.jobs.tasks import schedule_ensure
from apps.jobs.workers import HEARTBEAT_EVERY, worker_heartbeat, worker_stopped

logger = logging.getLogger("apps.jobs")

# How often a worker checks that a tick is queued. A tick whose worker died stays "running"
# until the recovery job takes it back; meanwhile the next check queues a new one, so the
# schedule heals itself while any `manage.py worker` runs.
HEAL_EVERY_SECONDS = 60
# Reconnecting after the database went away: 1 s, then twice as long each time, at most 30 s.
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
# The errors of a database that went away (a restart, a failover, a terminated backend). Any
# database error of the worker's own bookkeeping counts (a task's own errors are its result):
# through a pooler, a backend terminated mid-COMMIT surfaces as an InternalError ("received 2
# results from command 'COMMIT'"), and the cure is the same, a new connection.
DATABASE_GONE = (OperationalError, InterfaceError, DatabaseError)
# A task that failed because its own connection died (not because of what it did) is run
# again, up to this many attempts in all; a task's other errors are its result.
TASK_CONNECTION_ERRORS = (OperationalError, InterfaceError, InternalError)
TASK_ATTEMPTS = 5


def keep_alive(stop: threading.Event, worker_id: str, every: float | None = None) -> None:
    """Beat for `worker_id` and keep the schedule's tick queued, until `stop` is set. A
    database that is away is waited for: this thread never dies of it."""
    beat_every = every or HEARTBEAT_EVERY.total_seconds()
    heal_every = max(1, round(HEAL_EVERY_SECONDS / beat_every))
    beats = 0
    try:
        while not stop.is_set():
            try:
                worker_heartbeat(worker_id)
                if beats % heal_every == 0:
                    schedule_ensure()
            except DatabaseError as error:
                logger.warning("Task worker heartbeat: database unavailable (%s).", error)
            finally:
                # This thread's connection, closed after each beat: a worker holds one
                # connection (its tasks'), and the heartbeat's only for its moment.
                connections.close_all()
            beats += 1
            stop.wait(beat_every)
    finally:
        connections.close_all()


class ResilientWorker(BatchingWorker):
    """The batching worker (apps/jobs/batching.py), which outlives the database going away:
    where django-tasks-db's worker would exit (it re-raises every OperationalError but "database
    is locked"), this one closes its connection, waits with backoff and goes on. The results it
    could not write when the connection dropped are written once the database answers again;
    the tasks it claimed and did not start go back to the queue then, and so does a task that
    failed because its own connection dropped (up to 5 attempts)."""

    def run_again(self, db_task_result: Any, error: BaseException) -> bool:
        attempts = len(db_task_result.worker_ids or ())
        return isinstance(error, TASK_CONNECTION_ERRORS) and attempts < TASK_ATTEMPTS

    def run(self) -> None:
        pause = BACKOFF_FIRST
        while self.running:
            started = time.monotonic()
            try:
                super().run()
                return  # a batch done, --max-tasks reached, or asked to stop
            except DATABASE_GONE as error:
                if time.monotonic() - started > BACKOFF_MAX:
                    pause = BACKOFF_FIRST  # it had been working: a new outage
                logger.warning(
                    "Task worker %s lost the database (%s); reconnecting in %.0f s.",
                    self.worker_id,
                    str(error).strip().splitlines()[0] if str(error).strip() else error,
                    pause,
                )
                for connection in connections.all(initialized_only=True):
                    connection.close_if_unusable_or_obsolete()
                    connection.close()
                self.busy = False  # a signal now stops it; the lease takes its tasks back
                time.sleep(pause)
                pause = min(pause * 2, BACKOFF_MAX)


class Command(BaseCommand):
    help = (
        "Run a task worker (db_worker's options passed on after --), which runs tasks in "
        "batches (apps/jobs/batching.py), beats so that its tasks are taken back if it dies, "
        "outlives a database that goes away, stops gracefully on SIGTERM (the task at hand is "
        "finished first), and keeps the schedule's tick queued. Run as many as you like: each "
        "task runs once."
    )
    # No system checks at start (gunicorn runs none either; `migrate` does at each deploy): they
    # import every URLconf, a second of CPU at each start of a worker.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("worker_args", nargs="*", help="options for db_worker, after --")

    def handle(self, *args: Any, worker_args: list[str], **options: Any) -> None:
        base = db_worker.Command()
        parsed = vars(base.create_parser("manage.py", "db_worker").parse_args(worker_args))
        base.configure_logging(parsed["verbosity"])
        worker = ResilientWorker(
            queue_names=parsed["queue_name"].split(","),
            interval=parsed["interval"],
            batch=parsed["batch"],
            backend_name=parsed["backend_name"],
            startup_delay=parsed["startup_delay"],
            max_tasks=parsed["max_tasks"],
            worker_id=parsed["worker_id"],
            excluded_queue_names=[q for q in parsed["exclude_queues"].split(",") if q],
        )
        try:
            if schedule_ensure():
                self.stdout.write("Started the schedule's tick.")
        except DATABASE_GONE as error:
            logger.warning("Could not check the schedule yet: %s", error)
        close_old_connections()
        reloading = parsed["reload"] and not parsed["batch"]
        in_child = os.environ.get(DJANGO_AUTORELOAD_ENV) == "true"
        stop = threading.Event()
        beating = threading.Thread(
            target=keep_alive, args=(stop, worker.worker_id), name="worker-heartbeat", daemon=True
        )
        if not reloading or in_child:  # the reloader's parent process runs no tasks
            process_started("worker")  # its metrics, in PROMETHEUS_MULTIPROC_DIR when set
            beating.start()
        try:
            if reloading:
                if in_child:
                    worker.configure_signals()  # only the child process handles signals
                run_with_reloader(worker.run)
            else:
                worker.configure_signals()
                worker.run()
        finally:
            stop.set()
            if beating.is_alive():  # a beat under way would write the row again after the goodbye
                beating.join(timeout=10)
            for _ in range(2):  # a connection the database dropped: once more on a new one
                try:
                    worker_stopped(worker.worker_id)
                    break
                except DatabaseError:
                    connections.close_all()  # then the lease runs out instead
            process_dead(os.getpid())
