from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from apps.accounts.models import User
from apps.accounts.services import clean_email, user_create
from apps.common.validation import InvalidInput
from apps.workspaces.services import workspace_create


class Command(BaseCommand):
    help = "Create a workspace with an owner (created when new); prints the workspace id last."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the workspace name")
        parser.add_argument("--owner", required=True, metavar="EMAIL", help="the owner's e-mail")
        parser.add_argument(
            "--password", help="password for a new owner (without it they cannot sign in yet)"
        )

    def handle(
        self, *args: Any, name: str, owner: str, password: str | None, **options: Any
    ) -> None:
        try:
            with transaction.atomic():
                email = clean_email(owner, "--owner")
                user = User.objects.filter(email=email).first()
                if user is None:
                    user = user_create(email=email, password=password)
                elif password is not None:
                    raise InvalidInput(
                        "--password",
                        f"{email} already has an account; leave out --password to keep theirs.",
                    )
                workspace = workspace_create(name=name, owner=user)
        except InvalidInput as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"Created workspace {workspace.name!r} owned by {user.email}.")
        self.stdout.write(str(workspace.pk))
