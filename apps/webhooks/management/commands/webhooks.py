from datetime import UTC
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count, Max, Q

from apps.audit.services import Actor
from apps.common.dates import moment_text
from apps.common.validation import InvalidInput
from apps.webhooks.events import EVENT_TYPES
from apps.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from apps.webhooks.services import endpoint_create, endpoint_delete
from apps.workspaces.models import Workspace

ACTOR = Actor.of_operator("manage.py webhooks")


class Command(BaseCommand):
    help = "List, add and remove webhook endpoints (operators; owners use Settings → Webhooks)."

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="action", required=True)
        listing = commands.add_parser("list", help="endpoints, their last failure, pending count")
        listing.add_argument("--workspace", metavar="ID")
        add = commands.add_parser("add", help="add an endpoint; prints its whsec_ secret last")
        add.add_argument("--workspace", required=True, metavar="ID")
        add.add_argument("--url", required=True)
        add.add_argument(
            "--events",
            default=",".join(EVENT_TYPES),
            help="comma-separated event types (default: all)",
        )
        add.add_argument("--description", default="")
        remove = commands.add_parser("remove", help="remove an endpoint and its delivery log")
        remove.add_argument("endpoint_id", type=int)

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        getattr(self, f"_{action}")(**options)

    def _list(self, workspace: str | None = None, **_: Any) -> None:
        endpoints = WebhookEndpoint.objects.select_related("workspace").annotate(
            pending=Count(
                "deliveries", filter=Q(deliveries__status=WebhookDelivery.Status.PENDING)
            ),
            last_event=Max("deliveries__created_at"),
        )
        if workspace is not None:
            try:
                endpoints = endpoints.filter(workspace=Workspace.objects.get(pk=workspace))
            except (Workspace.DoesNotExist, ValidationError):
                raise CommandError(f"No workspace {workspace}.") from None
        if not endpoints:
            self.stdout.write("No webhook endpoints.")
            return
        for endpoint in endpoints:
            state = "enabled" if endpoint.enabled else "disabled"
            if endpoint.enabled and endpoint.failing_since:
                state = f"failing since {moment_text(endpoint.failing_since, UTC)}"
            failure = (
                WebhookAttempt.objects.filter(delivery__endpoint=endpoint, succeeded=False)
                .order_by("-at")
                .first()
            )
            self.stdout.write(
                f"{endpoint.pk}  {endpoint.workspace.name} (workspace {endpoint.workspace_id})  "
                f"{endpoint.url}  {state}  {endpoint.pending} pending"
            )
            self.stdout.write(f"    events: {', '.join(endpoint.event_types)}")
            if failure is not None:
                said = failure.response_status or failure.error
                self.stdout.write(f"    last failure: {moment_text(failure.at, UTC)}  {said}")

    def _add(self, workspace: str, url: str, events: str, description: str, **_: Any) -> None:
        try:
            place = Workspace.objects.get(pk=workspace)
        except (Workspace.DoesNotExist, ValidationError):
            raise CommandError(f"No workspace {workspace}.") from None
        try:
            made = endpoint_create(
                place,
                url=url,
                event_types=[e.strip() for e in events.split(",") if e.strip()],
                description=description,
                actor=ACTOR,
            )
        except InvalidInput as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"Added endpoint {made.endpoint.pk} for {place.name}: {made.endpoint.url}"
        )
        self.stdout.write("Its signing secret, shown once:", self.style.WARNING)
        self.stdout.write(made.secret)

    def _remove(self, endpoint_id: int, **_: Any) -> None:
        endpoint = (
            WebhookEndpoint.objects.select_related("workspace").filter(pk=endpoint_id).first()
        )
        if endpoint is None:
            raise CommandError(f"No webhook endpoint {endpoint_id}.")
        endpoint_delete(endpoint, actor=ACTOR)
        self.stdout.write(f"Removed endpoint {endpoint_id} ({endpoint.url}).")
