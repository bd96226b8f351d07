from django.core.management.base import BaseCommand, CommandError

from apps.common.validation import InvalidInput
from apps.communities.models import Community
from apps.communities.services import community_member_add


class Command(BaseCommand):
    help = "Add a person to a community by e-mail (a new person gets a set-password e-mail)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--community", required=True, type=int, metavar="ID")
        parser.add_argument("--email", required=True)
        parser.add_argument(
            "--base-url", default="http://127.0.0.1:8000", help="the dashboard's address for links"
        )

    def handle(self, *args, community: int, email: str, base_url: str, **options) -> None:
        found = Community.objects.select_related("workspace").filter(pk=community).first()
        if found is None:
            raise CommandError(f"No community has the id {community}.")
        try:
            user = community_member_add(community=found, email=email, base_url=base_url)
        except InvalidInput as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"{user.email} is a member of {found.name!r}.")
