"""The CLI's key of a device login (`gatehouse login`, RFC 8628), minted once its login is
approved on /device: tagged CLI for 90 days, replacing the installation's previous key (a
client that names no installation gets a key of its own on each login)."""

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import CLI_LIFETIME
from apps.api_keys.services import api_key_create, api_key_revoke
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput
from apps.devices.approval import device_approval_problem
from apps.devices.audit_actions import CLI_LOGIN
from apps.devices.models import DeviceAuthorization
from apps.workspaces.models import Workspace

from .issuing import GrantRefused, IssuedTokens


def cli_key_issue(authorization: DeviceAuthorization, *, ip: str | None) -> IssuedTokens:
    """Mint the CLI key of an approved device login, once (of many concurrent polls, one
    wins), and revoke the installation's previous one. The approval is checked again: a role,
    a team or a policy may have changed since."""
    user, workspace = authorization.user, authorization.workspace
    assert user is not None and workspace is not None  # set on approval
    now = timezone.now()
    actor = Actor.of_user(user, ip)
    try:
        return _mint(authorization, user, workspace, actor, now)
    except _Refused as refused:
        DeviceAuthorization.objects.filter(pk=authorization.pk).update(
            status=DeviceAuthorization.Status.DENIED
        )
        raise GrantRefused("access_denied", refused.problem) from None


class _Refused(Exception):
    def __init__(self, problem: str) -> None:
        self.problem = problem


def _mint(
    authorization: DeviceAuthorization,
    user: User,
    workspace: Workspace,
    actor: Actor,
    now: datetime,
) -> IssuedTokens:
    with transaction.atomic():
        # In the minting transaction, the membership row locked: a removal from the team
        # either comes first and is seen here, or waits and then revokes this key.
        problem = device_approval_problem(
            user, workspace, scopes=authorization.approved_scopes, now=now
        )
        if problem:
            raise _Refused(problem)
        if not DeviceAuthorization.objects.filter(
            pk=authorization.pk, status=DeviceAuthorization.Status.APPROVED
        ).update(status=DeviceAuthorization.Status.USED):
            raise GrantRefused("invalid_grant", "Unknown or already used device code.")
        previous = ApiKey.objects.filter(
            workspace=workspace,
            user=user,
            tag=ApiKey.Tag.CLI,
            installation_id=authorization.installation_id,
            revoked_at__isnull=True,
        ).select_related("workspace", "user")
        if not authorization.installation_id:
            previous = previous.none()
        replaced = tuple(api_key_revoke(key=key, actor=actor).hint for key in previous)
        try:
            created = api_key_create(
                workspace=workspace,
                user=user,
                name=authorization.device_name,
                scopes=authorization.approved_scopes,
                expires_at=None,
                tag=ApiKey.Tag.CLI,
                installation_id=authorization.installation_id or None,
                actor=actor,
            )
        except InvalidInput as error:  # e.g. the keys scopes of an approver demoted since
            raise _Refused(error.message) from None
        DeviceAuthorization.objects.filter(pk=authorization.pk).update(key=created.key)
        audit_record(
            workspace=workspace,
            action=CLI_LOGIN,
            actor=actor,
            key=created.key,
            subject=f"{created.key.name} ({created.key.hint})",
            data={
                "device": authorization.device_name,
                "requestedFrom": authorization.requested_ip,
                "scopes": authorization.approved_scopes,
                "replaced": list(replaced),
            },
        )
    return IssuedTokens(
        created.secret,
        int(CLI_LIFETIME.total_seconds()),
        list(created.key.scopes),
        replaced_hints=replaced,
    )
