from datetime import timedelta

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "apps.jobs"
    label = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from .queue import task_results_prune
        from .schedule import register_job
        from .tasks import schedule_after_migrate
        from .workers import tasks_recover

        post_migrate.connect(schedule_after_migrate, sender=self)
        register_job("task-results-prune", timedelta(days=1), task_results_prune)
        register_job("tasks-recover", timedelta(minutes=1), tasks_recover)
