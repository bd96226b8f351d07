"""What each demo key has been doing, by key name: when it was created (before its first
request) and its habits (apps/demo/history.py), read back into every page through
apps/demo/seeding.py."""

from dataclasses import dataclass
from datetime import timedelta

from .history import (
    BOT_POST,
    CI_PAGE,
    CREATE_PRODUCT,
    DAY,
    DEPLOY_PAGE,
    GET_WORKSPACE,
    HOUR,
    LEAK_FOUND,
    LIST_COMMUNITIES,
    LIST_PAGES,
    LIST_POSTS,
    LIST_PRODUCTS,
    MEMBER_REFUSED,
    NOTES_PAGE,
    RATE_LIMITED,
    REVOKED,
    SPAM_POST,
    STOREFRONT_REVOKED,
    Habit,
)

MINUTE = timedelta(minutes=1)
STRANGER = ("192.0.2.200", "2001:db8:4a::17")  # whoever found the leaked key


@dataclass(frozen=True)
class Story:
    created: timedelta  # how long ago the key was created
    habits: tuple[Habit, ...]
    revoked: timedelta | None = None  # how long ago it was revoked


STORIES: dict[str, Story] = {
    # Polls the circle it is limited to; since yesterday Zapier also calls from a new range
    # of addresses that the key's allowed networks refuse.
    "Zapier sync": Story(
        created=27 * DAY + 3 * HOUR,
        habits=(
            Habit(
                start=26 * DAY + 20 * HOUR,
                end=22 * HOUR,
                every=2 * HOUR,
                calls=(LIST_COMMUNITIES, LIST_POSTS, LIST_PRODUCTS),
                addresses=("203.0.113.20", "203.0.113.21"),
                agent="zapier-webhooks/2.1",
            ),
            Habit(
                start=21 * HOUR,
                end=5 * MINUTE,
                every=HOUR,
                calls=(LIST_POSTS, LIST_COMMUNITIES, LIST_PRODUCTS),
                addresses=("203.0.113.20", "198.51.100.40", "203.0.113.21", "203.0.113.20"),
                agent="zapier-webhooks/2.1",
            ),
        ),
    ),
    # Reads products, pages and the workspace every five hours, its bursts running into the
    # rate limit now and then; it has never needed its communities permission. Made for 60
    # days, it expires in five.
    "Analytics export": Story(
        created=55 * DAY,
        habits=(
            Habit(
                start=27 * DAY + 22 * HOUR,
                end=5 * HOUR,
                every=5 * HOUR,
                calls=(LIST_PRODUCTS, RATE_LIMITED, LIST_PAGES, GET_WORKSPACE),
                addresses=("198.51.100.7",),
                agent="python-httpx/0.28.1",
            ),
        ),
    ),
    # The old shop's last product sync, yesterday; revoked this morning, and the old shop,
    # still running, keeps trying it.
    "Old storefront": Story(
        created=30 * HOUR,
        revoked=STOREFRONT_REVOKED,
        habits=(
            Habit(
                start=29 * HOUR,
                end=STOREFRONT_REVOKED + 50 * MINUTE,
                every=25 * MINUTE,
                calls=(LIST_PRODUCTS, LIST_PRODUCTS, LIST_PRODUCTS, LIST_PRODUCTS, CREATE_PRODUCT),
                addresses=("203.0.113.80",),
                agent="storefront-sync/3.4",
            ),
            Habit(
                start=STOREFRONT_REVOKED - 10 * MINUTE,
                end=20 * MINUTE,
                every=30 * MINUTE,
                calls=(LIST_PRODUCTS,),
                addresses=("203.0.113.80",),
                agent="storefront-sync/3.4",
                answer=REVOKED,
            ),
        ),
    ),
    "Staging deploy": Story(
        created=20 * DAY,
        habits=(
            Habit(
                start=19 * DAY + 20 * HOUR,
                end=DAY + 2 * HOUR,
                every=9 * HOUR,
                calls=(LIST_PAGES, DEPLOY_PAGE, LIST_PAGES, LIST_PAGES),
                addresses=("192.0.2.10", "192.0.2.11"),
                agent="python-requests/2.32.3",
            ),
        ),
    ),
    "CI deploy": Story(
        created=45 * DAY,
        habits=(
            Habit(
                start=44 * DAY + 20 * HOUR,
                end=3 * HOUR,
                every=7 * HOUR,
                calls=(LIST_PAGES, CI_PAGE, LIST_PAGES),
                addresses=("198.51.100.23",),
                agent="GitHub-Actions gatehouse-deploy/1.4",
            ),
        ),
    ),
    "Ada's posting bot": Story(
        created=18 * DAY,
        habits=(
            Habit(
                start=17 * DAY + 20 * HOUR,
                end=9 * HOUR,
                every=11 * HOUR,
                calls=(LIST_COMMUNITIES, BOT_POST, LIST_POSTS, MEMBER_REFUSED),
                addresses=("192.0.2.44",),
                agent="ada-bot/0.3",
            ),
        ),
    ),
    "CLI on demo-laptop": Story(
        created=9 * DAY,
        habits=(
            Habit(
                start=8 * DAY + 22 * HOUR,
                end=2 * DAY,
                every=14 * HOUR,
                calls=(GET_WORKSPACE, LIST_PRODUCTS, LIST_PAGES, LIST_COMMUNITIES),
                addresses=("127.0.0.1",),
                agent="gatehouse-cli/1.0",
            ),
        ),
    ),
    # The connected app (its key is named after it), through MCP.
    "Claude Code": Story(
        created=6 * DAY,
        habits=(
            Habit(
                start=5 * DAY + 20 * HOUR,
                end=40 * MINUTE,
                every=5 * HOUR,
                calls=(GET_WORKSPACE, LIST_PAGES, NOTES_PAGE, LIST_PRODUCTS),
                addresses=("127.0.0.1",),
                agent="claude-code/1.0.30",
                door="mcp",
            ),
        ),
    ),
    # Its job read the circle every four hours until its key was pushed to a public
    # repository; a stranger read and posted with it until GitHub reported the leak, and
    # keeps trying it since.
    "Newsletter importer": Story(
        created=12 * DAY,
        revoked=LEAK_FOUND,
        habits=(
            Habit(
                start=11 * DAY + 20 * HOUR,
                end=LEAK_FOUND + HOUR,
                every=4 * HOUR,
                calls=(LIST_COMMUNITIES, LIST_POSTS),
                addresses=("203.0.113.50",),
                agent="newsletter-tools/1.2",
            ),
            Habit(
                start=9 * HOUR,
                end=LEAK_FOUND + 45 * MINUTE,
                every=20 * MINUTE,
                calls=(LIST_COMMUNITIES, LIST_POSTS, SPAM_POST),
                addresses=STRANGER,
                agent="python-requests/2.31.0",
            ),
            Habit(
                start=LEAK_FOUND - 15 * MINUTE,
                end=HOUR,
                every=25 * MINUTE,
                calls=(LIST_COMMUNITIES, SPAM_POST),
                addresses=STRANGER,
                agent="python-requests/2.31.0",
                answer=REVOKED,
            ),
        ),
    ),
}
