from django.apps import AppConfig


class InvitationsConfig(AppConfig):
    name = "apps.invitations"
    verbose_name = "Invitations"

    def ready(self) -> None:
        from apps.workspaces.signals import place_removed

        from .services import invitations_withdraw_for_removed

        place_removed.connect(invitations_withdraw_for_removed, dispatch_uid="invitations")
