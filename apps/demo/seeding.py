"""The demo keys' made-up history written where real requests leave theirs: each key's created
and revoked dates (and their audit events), last use and its address, the permissions' and
chosen objects' last use, the hourly and daily usage counts, the networks seen, the request
log, and the last day's refusals. All derived from the same requests, so they agree."""

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

from django.db.models import Model
from django.utils import timezone
from django.utils.text import slugify

from apps.api_keys.audit_actions import KEY_CREATED, KEY_LEAKED, KEY_REVOKED, MEMBER_KEY_CREATED
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.communities.models import Community
from apps.communities.services import post_create
from apps.metering.facts import new_request_id
from apps.metering.networks import network_of
from apps.metering.records import RequestEntry, outcome_of
from apps.oauth.audit_actions import OAUTH_AUTHORIZED
from apps.oauth.models import OAuthGrant
from apps.pages.services import page_create
from apps.products.services import product_create
from apps.request_log.recording import entries_write
from apps.service_accounts.audit_actions import SERVICE_ACCOUNT_CREATED
from apps.usage.models import KeyNetwork, KeyUsageDay, KeyUsageHour
from apps.workspaces.models import Membership, ServiceAccount

from .history import Request, requests_of
from .refusals import refusals_replay
from .stories import STORIES

CREATED_EVENTS = (KEY_CREATED, MEMBER_KEY_CREATED, OAUTH_AUTHORIZED)
Counts = Counter[tuple[int, datetime, str, str]]


def history_write(keys: dict[str, ApiKey], community: Community) -> None:
    """Give each key of `keys` (by story name) its story: dates, stamps, counts and log, and
    the objects its requests created."""
    now = timezone.now()
    counts: Counts = Counter()
    networks: list[KeyNetwork] = []
    entries: list[RequestEntry] = []
    for number, (name, story) in enumerate(STORIES.items()):
        key = keys[name]
        made = requests_of(
            story.habits,
            now=now,
            networks=list(key.allowed_networks or ()),
            community=community.pk,
            number=number,
        )
        made = [_made(key, request, community) if request.creates else request for request in made]
        _dates(key, now - story.created, now - story.revoked if story.revoked else None)
        _stamps(key, made)
        networks += _networks(key, made)
        for request in made:
            operation = f"mcp:{request.operation}" if request.door == "mcp" else request.operation
            hour = request.at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
            counts[(key.pk, hour, operation, outcome_of(request.status))] += 1
            entries.append(_entry(key, request))
    _usage(counts, now)
    KeyNetwork.objects.bulk_create(networks)
    entries_write(entries)
    refusals_replay([key.pk for key in keys.values()])  # the key pages' last day of refusals


def _dates(key: ApiKey, created: datetime, revoked: datetime | None) -> None:
    """The key made and revoked when its story says, and its history (audit) too; its expiry
    moves with its creation, so its lifetime stays the one it was made for (a connected app's
    key, which renews itself, keeps its own)."""
    ApiKey.objects.filter(pk=key.pk).update(created_at=created)
    if key.expires_at is not None and key.tag != ApiKey.Tag.MCP:
        lifetime = key.expires_at - key.created_at
        ApiKey.objects.filter(pk=key.pk).update(expires_at=created + lifetime)
    events = AuditEvent.objects.filter(key=key)
    events.filter(action__in=CREATED_EVENTS).update(created_at=created)
    OAuthGrant.objects.filter(key=key).update(created_at=created)
    # A service account's key: the account was made just before it, not at the demo's start.
    accounts = ServiceAccount.objects.filter(user_id=key.user_id, created_at__gt=created)
    for account in accounts:
        AuditEvent.objects.filter(
            workspace_id=account.workspace_id,
            action=SERVICE_ACCOUNT_CREATED,
            data__serviceAccount=account.pk,
        ).update(created_at=created)
        Membership.objects.filter(user_id=account.user_id).update(created_at=created)
    accounts.update(created_at=created)
    if revoked is not None:
        ApiKey.objects.filter(pk=key.pk).update(revoked_at=revoked)
        events.filter(action__in=(KEY_REVOKED, KEY_LEAKED)).update(created_at=revoked)


def _made(key: ApiKey, request: Request, community: Community) -> Request:
    """The object a request created, made (by its key's holder, at its time): its id."""
    made: Model
    if request.creates == "post":
        made = post_create(
            community=community, author=key.user, title=request.title, body=request.title
        )
    elif request.creates == "product":
        made = product_create(workspace=key.workspace, name=request.title, price_cents=2_900)
    else:
        slug = slugify(request.title)
        made = page_create(
            workspace=key.workspace, title=request.title, slug=slug, body=request.title
        )
    type(made).objects.filter(pk=made.pk).update(created_at=request.at)
    return replace(request, object_id=str(made.pk))


def _stamps(key: ApiKey, made: list[Request]) -> None:
    """Last use and its address, and each permission's and chosen object's last use, as the
    requests that got past the key's checks stamped them."""
    used = [request for request in made if request.used_the_key]
    if not used:
        return
    scopes = {request.scope: request.at.isoformat() for request in used if request.scope}
    objects = {request.reached: request.at.isoformat() for request in used if request.reached}
    ApiKey.objects.filter(pk=key.pk).update(
        last_used_at=used[-1].at,
        last_used_ip=used[-1].address,
        scope_last_used=scopes,
        object_last_used=objects if key.community_ids is not None else {},
    )


def _networks(key: ApiKey, made: list[Request]) -> list[KeyNetwork]:
    seen: dict[str, KeyNetwork] = {}
    for request in made:
        network = network_of(request.address)
        if not request.used_the_key or network is None:
            continue
        if network not in seen:
            seen[network] = KeyNetwork(key=key, network=network, first_seen=request.at)
        seen[network].last_seen, seen[network].last_address = request.at, request.address
    return list(seen.values())


def _entry(key: ApiKey, request: Request) -> RequestEntry:
    return RequestEntry(
        request_id=new_request_id(),
        at=request.at,
        key_id=key.pk,
        door=request.door,
        method=request.method,
        path=request.path,
        operation=request.operation,
        status=request.status,
        error=request.error,
        duration_ms=request.duration_ms,
        client_ip=request.address,
        user_agent=request.agent,
        object_id=request.object_id,
    )


def _usage(counts: Counts, now: datetime) -> None:
    """The counts by hour, and the finished days rolled up as the daily job does."""
    today = now.astimezone(UTC).date()
    days: Counts = Counter()
    for (key_id, hour, operation, outcome), count in counts.items():
        if hour.date() < today:
            day = datetime.combine(hour.date(), datetime.min.time(), UTC)
            days[(key_id, day, operation, outcome)] += count
    KeyUsageHour.objects.bulk_create(
        KeyUsageHour(key_id=key_id, hour=hour, operation=operation, outcome=outcome, count=count)
        for (key_id, hour, operation, outcome), count in counts.items()
    )
    KeyUsageDay.objects.bulk_create(
        KeyUsageDay(key_id=key_id, day=day.date(), operation=op, outcome=outcome, count=count)
        for (key_id, day, op, outcome), count in days.items()
    )
