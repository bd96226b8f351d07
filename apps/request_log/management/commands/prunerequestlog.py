from typing import Any

from django.core.management.base import BaseCommand

from apps.request_log.housekeeping import request_log_prune


class Command(BaseCommand):
    help = (
        "Keep REQUEST_LOG_DAYS whole days of the request log: on PostgreSQL make today's and the "
        "next two days' partitions and drop older days, elsewhere delete older rows. The task "
        "worker runs this daily; run it by hand when the partition alert fires."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        done = request_log_prune()
        self.stdout.write(done[:1].upper() + done[1:] + ".")
