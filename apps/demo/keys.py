"""The demo's keys, made through the same services as everyone's: of every kind and state
(restricted, expiring, revoked, leaked, a member's, a CLI login's, a connected app's, a service
account's, one waiting for approval). Their dates and use come from their stories
(apps/demo/stories.py)."""

from datetime import timedelta

from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import ALL_SCOPES
from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions
from apps.api_keys.services import api_key_create, api_key_revoke
from apps.audit.services import Actor
from apps.communities.models import Community
from apps.leaks.reports import leaked_key_revoke
from apps.oauth.issuing import (
    Approval,
    authorization_code_find,
    authorization_code_save,
    grant_create,
)
from apps.oauth.models import OAuthClient
from apps.service_accounts.services import service_account_create, service_account_key_create
from apps.workspaces.models import Workspace
from apps.workspaces.services import workspace_update

from .history import LEAK_URL


def demo_keys_create(
    workspace: Workspace, owner: User, admin: User, member: User, circle: Community
) -> dict[str, ApiKey]:
    """The keys with a story, by name; the connected app's key is named after the app."""
    now = timezone.now()

    def make(name: str, scopes: list[str], days: int | None, **more: object) -> ApiKey:
        """A key its holder made (the creator its page names), for one of the expiry choices:
        its story moves its creation back, and its expiry with it (apps/demo/seeding.py)."""
        more.setdefault("user", owner)
        return api_key_create(
            workspace=workspace,
            name=name,
            scopes=scopes,
            expires_at=now + timedelta(days=days) if days else None,
            actor=Actor.of_user(more["user"]),  # type: ignore[arg-type]
            **more,  # type: ignore[arg-type]
        ).key

    keys = {
        "Zapier sync": make(
            "Zapier sync",
            ["communities:read", "products:read"],
            180,
            description="Posts new community members to the CRM. Ask Linus before changing it.",
            restrictions=Restrictions(
                communities=(circle.pk,), networks=("203.0.113.0/24",), rate_limit_per_minute=600
            ),
        ),
        "Analytics export": make(
            "Analytics export", [s for s in ALL_SCOPES if s.endswith(":read")], 60
        ),
        "Old storefront": make(
            "Old storefront",
            ["products:read", "products:write"],
            90,
            description="The old shop's product sync, replaced by the new storefront.",
        ),
        "Staging deploy": make("Staging deploy", ["pages:read", "pages:write"], 30, user=admin),
        "Ada's posting bot": make(
            "Ada's posting bot",
            ["communities:read", "communities:write"],
            60,
            user=member,
            kind=ApiKey.Kind.MEMBER,
        ),
        "CLI on demo-laptop": make(
            "CLI on demo-laptop",
            list(ALL_SCOPES),
            None,
            tag=ApiKey.Tag.CLI,
            installation_id="demo-laptop",
        ),
        "Claude Code": _connected_app(workspace, owner),
        "CI deploy": _service_account_key(workspace, owner),
        "Newsletter importer": make(
            "Newsletter importer",
            ["communities:read", "communities:write"],
            90,
            description="Copies the circle's new posts into the weekly newsletter.",
        ),
    }
    api_key_revoke(key=keys["Old storefront"], actor=Actor.of_user(owner))
    # As a GitHub secret-scanning report does: revoked, recorded and its holder e-mailed.
    leaked_key_revoke(keys["Newsletter importer"], LEAK_URL, "commit")
    return keys


def _service_account_key(workspace: Workspace, owner: User) -> ApiKey:
    """The CI pipeline's key, held by a service account: it outlives whoever set it up."""
    account = service_account_create(
        workspace=workspace,
        name="CI deploy",
        description="The deploy pipeline: publishes pages on every merge to main.",
        actor=Actor.of_user(owner),
    )
    return service_account_key_create(
        account=account,
        name="CI deploy",
        scopes=["pages:read", "pages:write"],
        expires_at=timezone.now() + timedelta(days=180),
        description="Stored in the pipeline's secrets as GATEHOUSE_API_KEY.",
        actor=Actor.of_user(owner),
    ).key


def _connected_app(workspace: Workspace, owner: User) -> ApiKey:
    """Claude Code, connected by OAuth as the MCP Connect button does (listed under Connected
    apps, its key tagged MCP)."""
    redirect = "http://127.0.0.1:33418/callback"
    client = OAuthClient.objects.create(
        client_id="demo-claude-code",
        source=OAuthClient.Source.REGISTERED,
        client_name="Claude Code",
        redirect_uris=[redirect],
        grant_types=["authorization_code", "refresh_token"],
    )
    approval = Approval(
        client=client,
        user=owner,
        workspace=workspace,
        kind=ApiKey.Kind.WORKSPACE,
        scopes=["pages:read", "pages:write", "products:read"],
        restrictions=Restrictions(),
        redirect_uri=redirect,
        resource="http://127.0.0.1:8000/mcp",
        code_challenge="x" * 43,
        code_challenge_method="S256",
    )
    authorization_code_save(approval, "demo-code")
    code = authorization_code_find("demo-code", client)
    assert code is not None
    grant_create(code, ip="127.0.0.1")
    return ApiKey.objects.get(workspace=workspace, tag=ApiKey.Tag.MCP, name="Claude Code")


def waiting_key_create(workspace: Workspace, owner: User, admin: User) -> None:
    """The owner's approval of keys that can change things, and an admin's key waiting for the
    owner, asked for a little while ago (it has never made a request)."""
    workspace_update(
        workspace=workspace, changes={"key_approval": "write"}, actor=Actor.of_user(owner)
    )
    workspace.refresh_from_db()
    api_key_create(
        workspace=workspace,
        user=admin,
        name="Course publisher",
        description="Publishes the spring course pages from CI; needed before Monday's launch.",
        scopes=["pages:read", "pages:write"],
        expires_at=timezone.now() + timedelta(days=90),
        actor=Actor.of_user(admin),
    )
