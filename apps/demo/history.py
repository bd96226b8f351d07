"""The demo's made-up request history: what each demo key asked, when, from where and with what
answer. Everything the pages show about a key's use (its created date, last use, permissions'
and objects' last use, usage counts, networks, the request log, refusals, what a revoked key
did) is derived from this one history (apps/demo/seeding.py), so the pages tell one story."""

import ipaddress
from dataclasses import dataclass
from datetime import datetime, timedelta

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
# No made-up request this close to 24 hours ago: the key page's "Refused, last 24 hours" and a
# count of the log's last 24 hours agree even when read a few minutes after the seeding.
QUIET = timedelta(minutes=10)


@dataclass(frozen=True)
class Call:
    """A kind of request: `{community}` in the path is the community the key reaches; `scope`
    the permission it exercises; `creates` the kind of object it creates ("post", "product" or
    "page"), with `title` its title (`{n}` the how-manieth)."""

    method: str
    path: str
    operation: str
    scope: str = ""
    status: int = 200
    error: str = ""
    creates: str = ""
    title: str = ""


@dataclass(frozen=True)
class Habit:
    """Requests from `start` ago to `end` ago (timedeltas before now), one each `every`, the
    calls and addresses taken in turn; `answer` overrides the status of every call (a revoked
    key's `401 revoked-key`)."""

    start: timedelta
    end: timedelta
    every: timedelta
    calls: tuple[Call, ...]
    addresses: tuple[str, ...]
    agent: str
    door: str = "api"
    answer: tuple[int, str] | None = None


@dataclass(frozen=True)
class Request:
    """One made-up request, as a key's stamps, counts and log row need it."""

    at: datetime
    door: str
    method: str
    path: str
    operation: str
    status: int
    error: str
    address: str
    agent: str
    scope: str  # the permission it exercised ("" when refused before that)
    reached: str  # the chosen object it reached ("communities:12"), or ""
    object_id: str  # the community it reached; a created object's is set when it is made
    duration_ms: float
    creates: str = ""  # the kind of object it created, and its title
    title: str = ""

    @property
    def used_the_key(self) -> bool:
        """Whether the request got past the key's checks (its last use, network and scope are
        stamped): every answer but the key's refusal, its network's, and the rate limit's."""
        return self.status not in (401, 429) and self.error != "ip-not-allowed"


def _allowed(address: str, networks: list[str]) -> bool:
    ip = ipaddress.ip_address(address)
    return not networks or any(ip in ipaddress.ip_network(network) for network in networks)


def requests_of(
    habits: tuple[Habit, ...],
    *,
    now: datetime,
    networks: list[str],
    community: int | None,
    number: int,
) -> list[Request]:
    """The requests of one key's habits, oldest first. An address outside the key's allowed
    `networks` is refused `403 ip-not-allowed`."""
    made: list[Request] = []
    created = 0
    for habit in habits:
        step = 0
        at = now - habit.start
        while at <= now - habit.end:
            call = habit.calls[step % len(habit.calls)]
            address = habit.addresses[step % len(habit.addresses)]
            status, error = habit.answer or (call.status, call.error)
            if not _allowed(address, networks):
                status, error = 403, "ip-not-allowed"
            moment = at + timedelta(minutes=(step * 17 + number * 7) % 41)
            step += 1
            at += habit.every
            if abs(moment - (now - DAY)) < QUIET or moment > now:
                continue
            path = call.path.format(community=community)
            used = status not in (401, 429) and error != "ip-not-allowed"
            exercised = used and error != "insufficient-scope"
            reached = f"communities:{community}" if "{community}" in call.path else ""
            creates = call.creates if 200 <= status < 300 else ""
            created += bool(creates)
            object_id = str(community) if reached and exercised and not creates else ""
            made.append(
                Request(
                    at=moment,
                    door=habit.door,
                    method="POST" if habit.door == "mcp" else call.method,
                    path="/mcp" if habit.door == "mcp" else f"/api/v1{path}",
                    operation=call.operation,
                    status=status,
                    error=error,
                    address=address,
                    agent=habit.agent,
                    scope=call.scope if exercised else "",
                    reached=reached if exercised else "",
                    object_id=object_id,
                    duration_ms=round(4 + (step * 13 + number * 5) % 37 * 1.7, 2),
                    creates=creates,
                    title=call.title.format(n=created) if creates else "",
                )
            )
    return sorted(made, key=lambda request: request.at)


LIST_COMMUNITIES = Call("GET", "/communities", "list_communities", "communities:read")
LIST_POSTS = Call("GET", "/communities/{community}/posts", "list_posts", "communities:read")
BOT_POST = Call(
    "POST",
    "/communities/{community}/posts",
    "create_post",
    "communities:write",
    201,
    creates="post",
    title="Weekly photo challenge #{n}",
)
SPAM_POST = Call(
    "POST",
    "/communities/{community}/posts",
    "create_post",
    "communities:write",
    201,
    creates="post",
    title="Camera gear at 90% off, today only ({n})",
)
LIST_PRODUCTS = Call("GET", "/products", "list_products", "products:read")
CREATE_PRODUCT = Call(
    "POST",
    "/products",
    "create_product",
    "products:write",
    201,
    creates="product",
    title="Canvas print, batch {n}",
)
LIST_PAGES = Call("GET", "/pages", "list_pages", "pages:read")
DEPLOY_PAGE = Call(
    "POST", "/pages", "create_page", "pages:write", 201, creates="page", title="Release notes {n}"
)
CI_PAGE = Call(
    "POST", "/pages", "create_page", "pages:write", 201, creates="page", title="Changelog {n}"
)
NOTES_PAGE = Call(
    "POST", "/pages", "create_page", "pages:write", 201, creates="page", title="Lesson notes {n}"
)
GET_WORKSPACE = Call("GET", "/workspace", "get_workspace")
RATE_LIMITED = Call("GET", "/products", "list_products", "products:read", 429, "rate-limited")
MEMBER_REFUSED = Call(
    "GET", "/products", "list_products", "products:read", 403, "insufficient-scope"
)
REVOKED = (401, "revoked-key")

# When the leaked key was found in public and revoked, and where (GitHub's report).
LEAK_FOUND = timedelta(hours=5, minutes=12)
LEAK_URL = "https://github.com/demo-academy/newsletter-tools/blob/main/.env"
# When the owner revoked the old storefront's key, the day after its last product sync.
STOREFRONT_REVOKED = timedelta(hours=6, minutes=40)
