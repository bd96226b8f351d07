from django.apps import AppConfig


class TeamConfig(AppConfig):
    """The Team page: owners invite owners and admins, change roles, remove teammates. It
    stands on the tenant core and on invitations, so it sits above both."""

    name = "apps.team"
    label = "team"
