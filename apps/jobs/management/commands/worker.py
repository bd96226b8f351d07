from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from apps.jobs.tasks import schedule_ensure


class Command(BaseCommand):
    help = (
        "Run a task worker (`db_worker`, options passed on), after making sure the schedule's "
        "tick is queued. Run as many as you like: each task runs once."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("worker_args", nargs="*", help="options for db_worker, after --")

    def handle(self, *args: Any, worker_args: list[str], **options: Any) -> None:
        if schedule_ensure():
            self.stdout.write("Started the schedule's tick.")
        call_command("db_worker", *worker_args)
