"""What one API or MCP request has learned about itself on the way through, in one typed place.

The door sets the operation, authentication sets the key and its rate-limit standing, and the
front door reads them all at the end to count the request and word its log line. One object
attached once, instead of loose attributes on the request.
"""

from dataclasses import dataclass

from django.http import HttpRequest

from .ratelimit import RateLimitState


@dataclass(slots=True)
class RequestFacts:
    operation: str = ""  # how the request is counted: the API operation, or `mcp:<tool>`
    key_id: int | None = None  # the key presented, when it is one of ours (even a refused one)
    key_hint: str | None = None  # its hint, for the refusal's log line
    rate_limit: RateLimitState | None = None  # the key's standing, for the RateLimit fields
    counted: str | None = None  # the count field the limiter's call added one to, in Redis


def request_facts(request: HttpRequest) -> RequestFacts:
    """The request's facts, attached on first use."""
    attached = vars(request)
    facts: RequestFacts | None = attached.get("gatehouse_facts")
    if facts is None:
        facts = attached["gatehouse_facts"] = RequestFacts()
    return facts
