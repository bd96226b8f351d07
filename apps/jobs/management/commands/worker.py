import threading
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connections

from apps.jobs.tasks import schedule_ensure

# How often a worker checks that a tick is queued. A tick whose worker died stays "running" for
# ever in the database backend; the next check queues a new one, so the schedule heals itself
# while any `manage.py worker` runs.
HEAL_EVERY_SECONDS = 60


def keep_the_schedule(stop: threading.Event, every: float = HEAL_EVERY_SECONDS) -> None:
    """Queue a tick whenever none is waiting, until `stop` is set."""
    try:
        while not stop.wait(every):
            try:
                schedule_ensure()
            finally:
                close_old_connections()
    finally:
        connections.close_all()  # this thread's own connection


class Command(BaseCommand):
    help = (
        "Run a task worker (`db_worker`, options passed on after --), after making sure the "
        "schedule's tick is queued, and keep it queued. Run as many as you like: each task "
        "runs once."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("worker_args", nargs="*", help="options for db_worker, after --")

    def handle(self, *args: Any, worker_args: list[str], **options: Any) -> None:
        if schedule_ensure():
            self.stdout.write("Started the schedule's tick.")
        close_old_connections()
        stop = threading.Event()
        threading.Thread(
            target=keep_the_schedule, args=(stop,), name="schedule-keeper", daemon=True
        ).start()
        try:
            call_command("db_worker", *worker_args)
        finally:
            stop.set()
