from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.invitations.services import invitation_create
from apps.workspaces.selectors import STAFF_ROLES, workspace_for_operator


class Command(BaseCommand):
    help = (
        "Invite a person to a workspace's team as owner or admin: they get a link, and join "
        "once they accept. Prints the link too."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, metavar="ID", help="workspace id")
        parser.add_argument("--email", required=True)
        parser.add_argument("--role", required=True, choices=[str(r) for r in STAFF_ROLES])
        parser.add_argument(
            "--base-url",
            default=settings.SITE_URL,
            help=f"the dashboard's address for the link (default: SITE_URL, {settings.SITE_URL})",
        )

    def handle(
        self, *args: Any, workspace: str, email: str, role: str, base_url: str, **options: Any
    ) -> None:
        try:
            found = workspace_for_operator(workspace)
            invitation, link = invitation_create(
                workspace=found,
                email=email,
                role=role,
                actor=Actor.of_operator("addteammember"),
                base_url=base_url,
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        except InvalidInput as error:
            raise CommandError(error.message) from None
        self.stdout.write(
            f"Invited {invitation.email} to {found.name!r} as {role}; they join once they "
            f"accept.\n  Invitation link (works once, for 7 days): {link}"
        )
