from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.communities.models import Community
from apps.invitations.services import invitation_create


class Command(BaseCommand):
    help = (
        "Invite a person to a community by e-mail: they get a link, and join once they accept. "
        "Prints the link too."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--community", required=True, type=int, metavar="ID")
        parser.add_argument("--email", required=True)
        parser.add_argument(
            "--base-url",
            default=settings.SITE_URL,
            help=f"the dashboard's address for the link (default: SITE_URL, {settings.SITE_URL})",
        )

    def handle(self, *args: Any, community: int, email: str, base_url: str, **options: Any) -> None:
        found = Community.objects.select_related("workspace").filter(pk=community).first()
        if found is None:
            raise CommandError(f"No community has the id {community}.")
        try:
            invitation, link = invitation_create(
                workspace=found.workspace,
                community=found,
                email=email,
                role="member",
                actor=Actor.of_operator("addcommunitymember"),
                base_url=base_url,
            )
        except InvalidInput as error:
            raise CommandError(error.message) from None
        self.stdout.write(
            f"Invited {invitation.email} to {found.name!r}; they join once they accept.\n"
            f"  Invitation link (works once, for 7 days): {link}"
        )
