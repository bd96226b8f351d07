from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from apps.accounts.models import User
from apps.api.scopes import ALL_SCOPES
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import DEFAULT_LIFETIME, expiry_in_days
from apps.api_keys.services import api_key_create, api_key_revoke
from apps.audit.services import Actor
from apps.demo.content import demo_content_ensure
from apps.leaks.secrets import api_key_find_by_secret
from apps.webhooks.events import EVENT_TYPES
from apps.webhooks.models import WebhookEndpoint
from apps.webhooks.services import endpoint_create
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.services import workspace_create

DEMO_EMAIL = "owner@demo.gatehouse.test"
DEMO_PASSWORD = "gatehouse-demo-2026"
DEMO_WORKSPACE = "Demo Academy"
MCP_INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


class Command(BaseCommand):
    help = (
        "Create (once) a demo workspace with an owner, mint a fresh demo key, print how to use it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args: Any, base_url: str, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError("The demo uses a published password: run it only with DEBUG on.")
        with transaction.atomic():
            user = User.objects.filter(email=DEMO_EMAIL).first()
            if user is None:
                user = User.objects.create_user(email=DEMO_EMAIL, password=DEMO_PASSWORD)
            membership = Membership.objects.filter(user=user, role=Membership.Role.OWNER).first()
            workspace: Workspace = (
                membership.workspace
                if membership
                else workspace_create(name=DEMO_WORKSPACE, owner=user)
            )
            # Every event of the workspace goes to the development server's own receiver.
            receiver = f"{base_url.rstrip('/')}/dev/webhooks/receive"
            if not WebhookEndpoint.objects.filter(workspace=workspace, url=receiver).exists():
                endpoint_create(
                    workspace,
                    url=receiver,
                    event_types=list(EVENT_TYPES),
                    description="The development server's own receiver",
                    actor=Actor.of_user(user),
                )
            filled = demo_content_ensure(workspace, user)
            secret = _demo_secret(workspace, user)
        base_url = base_url.rstrip("/")
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"Gatehouse demo workspace: {workspace.name}"
                    + (
                        " (filled with demo products, pages, communities and keys)"
                        if filled
                        else ""
                    ),
                    f"  Sign in:   {base_url}/sign-in/",
                    f"  E-mail:    {DEMO_EMAIL}",
                    f"  Password:  {DEMO_PASSWORD}",
                    f"  Demo key:  {secret}",
                    "  Try it:",
                    f"    curl -H 'Authorization: Bearer {secret}' {base_url}/api/v1/workspace",
                    f"  API document: {base_url}/api/v1/openapi.json",
                    f"  Terminal:  .venv/bin/gatehouse login --url {base_url}",
                    f"  Mailbox:   {base_url}/dev/mail/ (every e-mail this server sends)",
                    f"  Webhooks:  {base_url}/dev/webhooks/ (every event of this workspace, "
                    "delivered by the worker, whose log below shows each delivery)",
                    f"  MCP:       add {base_url}/mcp to an MCP client and press Connect "
                    "(sign in here as above and approve)",
                    "  MCP, with the MCP Inspector's CLI (Node.js):",
                    f"    npx -y {MCP_INSPECTOR} --cli {base_url}/mcp --transport http "
                    f"--header 'Authorization: Bearer {secret}' --method tools/list",
                    "",
                ]
            )
        )


def _demo_secret(workspace: Workspace, user: User) -> str:
    """The demo key's secret: the one kept from the last start while that key is active, so a
    client configured with it keeps working across restarts; otherwise a new key (the others
    revoked), its secret kept in DEMO_KEY_FILE (git-ignored, readable by its owner only, and
    only ever written here, with DEBUG on)."""
    kept_file = Path(settings.DEMO_KEY_FILE)
    kept = kept_file.read_text().strip() if kept_file.exists() else ""
    key = api_key_find_by_secret(kept) if kept else None
    if key is not None and key.workspace_id == workspace.pk and key.state == "active":
        return kept
    for previous in ApiKey.objects.in_state("active").filter(
        workspace=workspace, user=user, name="Demo key"
    ):
        api_key_revoke(key=previous, actor=Actor.of_operator("demo"))
    created = api_key_create(
        workspace=workspace,
        user=user,
        name="Demo key",
        scopes=list(ALL_SCOPES),
        expires_at=expiry_in_days(DEFAULT_LIFETIME.days),
        actor=Actor.of_user(user),
    )
    kept_file.parent.mkdir(parents=True, exist_ok=True)
    kept_file.touch(mode=0o600)
    kept_file.write_text(created.secret + "\n")
    return created.secret
