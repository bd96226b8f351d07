from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "apps.demo"
    label = "demo"
    verbose_name = "Demo workspace"

    def ready(self) -> None:
        from .refusals import replay_on_a_development_server

        replay_on_a_development_server()
