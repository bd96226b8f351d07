"""When each scheduled job runs next. A job runs when a worker claims its row (a conditional
UPDATE moving `next_run_at` on), so with any number of workers each run happens once."""

from django.db import models


class ScheduledJob(models.Model):
    name = models.CharField(max_length=64, primary_key=True)
    next_run_at = models.DateTimeField()
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.name


class WorkerHeartbeat(models.Model):
    """A task worker's sign of life, written every few seconds by the worker itself. A task
    whose worker stopped beating is taken back (`workers.tasks_recover`)."""

    worker_id = models.CharField(max_length=64, primary_key=True)
    seen_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.worker_id
