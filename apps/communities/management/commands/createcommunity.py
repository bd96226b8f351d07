import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.common.validation import InvalidInput
from apps.communities.services import community_create
from apps.workspaces.models import Workspace


def workspace_by_id(raw: str) -> Workspace:
    try:
        workspace = Workspace.objects.filter(pk=uuid.UUID(raw)).first()
    except ValueError:
        raise CommandError(f"--workspace {raw!r} is not a workspace id.") from None
    if workspace is None:
        raise CommandError(f"No workspace has the id {raw}.")
    return workspace


class Command(BaseCommand):
    help = "Create a community in a workspace; prints the community id as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--workspace", required=True, metavar="ID")

    def handle(self, *args: Any, name: str, workspace: str, **options: Any) -> None:
        try:
            community = community_create(workspace=workspace_by_id(workspace), name=name)
        except InvalidInput as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"Created community {community.name!r}.")
        self.stdout.write(str(community.pk))
