"""Acting on all a Key health check counts (docs/product.md §13): revoke the idle keys, narrow
keys to the permissions they used, re-create keys that expire (or never do) as new expiring
keys, delete the service accounts nothing uses. Each is planned first, naming every key or
account and what happens to it, then carried out on exactly the ones the confirmation named
that still meet the check."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.narrowing import api_key_narrow
from apps.api_keys.policy import DEFAULT_LIFETIME, expiry_in_days
from apps.api_keys.services import CreatedApiKey, api_key_create, api_key_revoke
from apps.audit.services import Actor
from apps.common.dates import day_text
from apps.common.validation import InvalidInput
from apps.key_pages.pages import DASHBOARD
from apps.key_pages.selectors import KeyFilters
from apps.service_accounts.services import (
    service_account_delete,
    service_account_key_create,
    unused_service_accounts,
)
from apps.workspaces.decorators import WorkspaceRequest
from apps.workspaces.models import Membership, ServiceAccount

from .checks import KEY_CHECKS

# What each check's one click does; the rest (waiting keys, quotas) act on their own pages.
ACTS = {
    "idle-warned": "revoke",
    "idle-90": "revoke",
    "idle-30": "revoke",
    "unused-scopes": "narrow",
    "write-unrestricted": "narrow",
    "expiring": "recreate",
    "no-expiry": "recreate",
    "unused-service-accounts": "delete",
}
VERBS = {"revoke": "Revoke", "narrow": "Narrow", "recreate": "Re-create", "delete": "Delete"}
DONE = {"revoke": "Revoked", "narrow": "Narrowed", "recreate": "Re-created", "delete": "Deleted"}


@dataclass(frozen=True)
class Planned:
    """One key (or service account) a check counts, and what acting on all does to it."""

    subject: ApiKey | ServiceAccount
    change: str  # what happens, in words
    skipped: str = ""  # why nothing happens to it, when nothing does
    keeps: tuple[str, ...] = ()  # narrowing: the permissions it keeps


def counted(request: WorkspaceRequest, slug: str, now: datetime) -> QuerySet[Any]:
    """What the check `slug` counts now: the same filter the tile and the list use."""
    if slug == "unused-service-accounts":
        return unused_service_accounts(request.workspace, now).order_by("name")
    if slug == "idle-warned":
        values: dict[str, Any] = {"idle_warned": True}
    else:
        values = next(v for s, v, *_ in KEY_CHECKS if s == slug)
    keys = KeyFilters(**values).apply(DASHBOARD.keys(request), now)
    return keys.select_related("user__service_account").order_by("name", "pk")


def plan(request: WorkspaceRequest, slug: str) -> list[Planned]:
    """Every key or account the check counts, with what acting on all would do to each."""
    now = timezone.now()
    act = ACTS[slug]
    owner = request.membership.role == Membership.Role.OWNER
    return [_planned(request, act, subject, owner, now) for subject in counted(request, slug, now)]


def _planned(
    request: WorkspaceRequest, act: str, subject: Any, owner: bool, now: datetime
) -> Planned:
    if act == "delete":
        if not owner:
            return Planned(subject, "", skipped="Only an owner deletes service accounts.")
        return Planned(subject, "Deleted; every key of it revoked at once.")
    if act == "revoke":
        return Planned(subject, "Revoked: it fails from the next request on.")
    if act == "narrow":
        unused = subject.unused_scopes_at(now)
        keeps = tuple(scope for scope in subject.scopes if scope not in unused)
        if not unused:
            return Planned(subject, "", skipped="It used every permission it holds.")
        if not keeps:
            return Planned(subject, "", skipped="It used none of its permissions: revoke it.")
        return Planned(subject, f"Loses {', '.join(unused)}.", keeps=keeps)
    problem = _recreate_problem(request, subject, owner)
    if problem:
        return Planned(subject, "", skipped=problem)
    return Planned(
        subject,
        f"A new key like it, expiring on {day_text(expiry_for(request))}; its secret is shown "
        "once. This key keeps working until you revoke it (or it expires).",
    )


def _recreate_problem(request: WorkspaceRequest, key: ApiKey, owner: bool) -> str:
    if key.tag:
        return "A CLI or connected app's key: log in or connect again instead."
    if key.user.is_service_account:
        return "" if owner else "Only an owner makes a service account's keys."
    if key.user_id != request.user.pk:
        return f"Held by {key.user.email}: only they can re-create it (or hand it over)."
    return ""


def expiry_for(request: WorkspaceRequest) -> datetime:
    """A re-created key's expiry: the default lifetime, as the policy allows."""
    return expiry_in_days(min(DEFAULT_LIFETIME.days, request.workspace.key_max_lifetime_days))


@dataclass
class Outcome:
    done: list[Planned]
    created: list[CreatedApiKey]
    left_out: int  # named in the confirmation, but no longer counted (or not to be acted on)
    refused: list[tuple[Planned, str]]


def carry_out(request: WorkspaceRequest, slug: str, ids: list[int], actor: Actor) -> Outcome:
    """Act on the confirmed `ids` that the check still counts, as planned for each now."""
    wanted = set(ids)
    planned = [p for p in plan(request, slug) if p.subject.pk in wanted]
    outcome = Outcome(done=[], created=[], left_out=len(wanted), refused=[])
    for item in planned:
        if item.skipped:
            continue
        try:
            made = _act(request, ACTS[slug], item, actor)
        except InvalidInput as error:
            outcome.refused.append((item, error.message))
            continue
        outcome.done.append(item)
        if made is not None:
            outcome.created.append(made)
    outcome.left_out -= len(outcome.done) + len(outcome.refused)
    return outcome


def _act(request: WorkspaceRequest, act: str, item: Planned, actor: Actor) -> CreatedApiKey | None:
    """Do `act` to one planned key or account; the new key, for a re-creation."""
    subject = item.subject
    if isinstance(subject, ServiceAccount):
        service_account_delete(account=subject, actor=actor)
        return None
    if act == "revoke":
        api_key_revoke(key=subject, actor=actor)
        return None
    if act == "narrow":
        api_key_narrow(key=subject, scopes=list(item.keeps), actor=actor)
        return None
    if subject.user.is_service_account:
        account = subject.user.service_account
        return service_account_key_create(
            account=account,
            name=subject.name,
            description=subject.description,
            scopes=list(subject.scopes),
            expires_at=expiry_for(request),
            restrictions=subject.restrictions,
            actor=actor,
            quota=None if account.shared_quota else subject.quota,
        )
    return api_key_create(
        workspace=request.workspace,
        user=request.user,
        name=subject.name,
        description=subject.description,
        scopes=list(subject.scopes),
        expires_at=expiry_for(request),
        restrictions=subject.restrictions,
        quota=subject.quota,
        actor=actor,
    )
