from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.services import clean_email
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import DEFAULT_LIFETIME, expiry_in_days
from apps.api_keys.services import api_key_create
from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.selectors import workspace_for_operator


def parse_expires_at(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(
            f"--expires-at {value!r} is not an ISO 8601 date or time, e.g. 2027-03-31T12:00:00Z."
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Mint an API key for a user of a workspace; prints the secret alone as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, metavar="ID", help="workspace id")
        parser.add_argument("--user", required=True, metavar="EMAIL", help="the key's owner")
        parser.add_argument("--name", required=True, help="what the key is for")
        parser.add_argument(
            "--scopes", required=True, help="comma-separated, e.g. products:read,pages:write"
        )
        expiry = parser.add_mutually_exclusive_group()
        expiry.add_argument("--expires-at", metavar="ISO8601", help="expiry moment (UTC if naive)")
        expiry.add_argument("--expires-in", type=int, metavar="DAYS", help="expiry in days")
        expiry.add_argument("--no-expiry", action="store_true", help="a key that never expires")
        parser.add_argument(
            "--cli", action="store_true", help="tag the key CLI (it then lives exactly 90 days)"
        )
        parser.add_argument(
            "--member",
            action="store_true",
            help="a member key for a community member (communities scopes only)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = self._workspace(options["workspace"])
        email = self._clean(clean_email, options["user"], "--user")
        membership = (
            Membership.objects.select_related("user")
            .filter(workspace=workspace, user__email=email)
            .first()
        )
        if membership is None:
            raise CommandError(f"{email} is not a user of workspace {workspace.pk}.")
        is_member = membership.role == Membership.Role.MEMBER
        if options["member"] and not is_member:
            raise CommandError(f"{email} is an owner or admin: member keys are for members.")
        if is_member and not options["member"]:
            raise CommandError(f"{email} is a community member: add --member for a member key.")
        if options["member"] and options["cli"]:
            raise CommandError("--cli and --member do not go together.")
        scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
        expiry_given = options["expires_at"] or options["expires_in"] is not None
        if options["cli"] and (expiry_given or options["no_expiry"]):
            raise CommandError("CLI keys always expire after 90 days; drop the expiry option.")
        if options["expires_at"]:
            expires_at = parse_expires_at(options["expires_at"])
        elif options["expires_in"] is not None:
            if not 1 <= options["expires_in"] <= 365:
                raise CommandError("--expires-in must be between 1 and 365 days.")
            expires_at = expiry_in_days(options["expires_in"])
        elif options["no_expiry"] or options["cli"]:
            expires_at = None
        else:  # the default lifetime, or the workspace policy's longest if that is shorter
            expires_at = expiry_in_days(min(DEFAULT_LIFETIME.days, workspace.key_max_lifetime_days))
        try:
            created = api_key_create(
                workspace=workspace,
                user=membership.user,
                name=options["name"],
                scopes=scopes,
                expires_at=expires_at,
                tag=ApiKey.Tag.CLI if options["cli"] else ApiKey.Tag.NONE,
                kind=ApiKey.Kind.MEMBER if options["member"] else ApiKey.Kind.WORKSPACE,
                actor=Actor.of_operator("createapikey"),
            )
        except InvalidInput as error:
            raise CommandError(error.message) from None
        key = created.key
        expiry = key.expires_at.isoformat() if key.expires_at else "never"
        self.stdout.write(
            f"Created key {key.name!r} ({key.hint}) for {email}, scopes "
            f"{' '.join(key.scopes)}, expires {expiry}. Copy the secret now: it is not stored."
        )
        self.stdout.write(created.secret)
        if key.state == "pending":
            # On stderr, so that `createapikey ... | tail -1` still captures just the secret.
            self.stderr.write(
                f"This key waits for an owner's approval ({workspace.name}'s policy: "
                f"{workspace.get_key_approval_display().lower()}): it answers 401 pending-key "
                "until an owner approves it under Approvals or with `gatehouse keys approve "
                f"{key.pk}`. The owners have been e-mailed."
            )

    def _workspace(self, raw: str) -> Workspace:
        try:
            return workspace_for_operator(raw)
        except ValueError as error:
            raise CommandError(str(error)) from None

    @staticmethod
    def _clean(cleaner: Callable[[str, str], str], value: str, field: str) -> str:
        try:
            return cleaner(value, field)
        except InvalidInput as error:
            raise CommandError(error.message) from None
