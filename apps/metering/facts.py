"""What one API or MCP request has learned about itself on the way through, in one typed place.

The front door opens it (the request id, the start, the door, the client's address worked out
once), the door sets the operation, `admit` sets the key and its rate-limit standing, and
`finish` reads it all at the end to count and log the request. One object attached once,
instead of loose attributes on the request.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from uuid import UUID

from django.http import HttpRequest

from apps.common.http import client_ip
from apps.common.logging import request_context

from .standing import RateLimitState


def new_request_id() -> str:
    """A request's id as its answer's `Request-Id` says it: `req_` and 24 hex digits."""
    return "req_" + os.urandom(12).hex()


@dataclass(slots=True)
class RequestFacts:
    client_ip: str | None  # the caller's address (apps.common.http.client_ip), worked out once
    request_id: str = field(default_factory=new_request_id)
    started: float = field(default_factory=time.perf_counter)
    door: str = "api"  # `api` or `mcp`
    operation: str = ""  # the operation's own name (the MCP tool's), or an MCP method
    key_id: int | None = None  # the key presented, when it is one of ours (even a refused one)
    key_hint: str | None = None  # its hint, for the refusal's log line
    workspace_id: UUID | None = None  # the key's workspace, once it authenticated
    rate_limit: RateLimitState | None = None  # the key's standing, for the RateLimit fields
    counted: str | None = None  # the count field the limiter's call added one to, in Redis
    logged: bool = False  # the limiter's call put the request's log entry in Redis
    # The count field the limiter's call would add to as allowed, when that call failed and may
    # have run all the same: the request is then settled by its mark (apps/metering/settling.py).
    unsettled: str | None = None
    object_id: str = ""  # the object the request created or acted on, for the request log
    # The status and error code the same operation has over the API, when the HTTP answer
    # does not carry them: an MCP tool error travels in a 200 (docs/product.md §11).
    answered_as: tuple[int, str] | None = None
    # Gives back the unit of quota the request took as it was admitted, when its answer is not
    # a counted 2xx (apps/metering/quotas.py).
    quota_give_back: Callable[[], None] | None = None
    quota_exempt: bool = False  # MCP's own methods (initialize, tools/list): never counted


def request_facts(request: HttpRequest) -> RequestFacts:
    """The request's facts, attached on first use."""
    attached = vars(request)
    facts: RequestFacts | None = attached.get("gatehouse_facts")
    if facts is None:
        facts = attached["gatehouse_facts"] = RequestFacts(client_ip(request))
        request_context.set(facts)  # for the JSON log lines, until the next request
    return facts
