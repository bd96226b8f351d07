"""The steps every door takes the same way (the HTTP API in config/api.py, MCP in
apps/mcp/door.py): refusing a key sent in the URL, running an operation from its raw parameters,
and turning what an operation raised into the refusal the door answers with."""

from typing import Any

from django.db import DatabaseError, connection
from django.http import HttpRequest

from apps.common.retry import RETRY_AFTER_SECONDS, retryable, transaction_conflict
from apps.common.validation import InvalidInput

from .errors import ApiFailure
from .operations import Call, NotFound, Operation

QUERY_CREDENTIALS = ("access_token", "api_key")

# What a door catches around an operation; `refusal_of` words each as the error table does.
REFUSED = (ApiFailure, InvalidInput, NotFound, DatabaseError)


def refuse_query_credentials(request: HttpRequest) -> None:
    """400 for a key sent in the URL: it is exposed in logs and histories, so refuse it."""
    for name in QUERY_CREDENTIALS:
        if name in request.GET:
            raise ApiFailure(
                "invalid-input",
                f"Do not send a key in the URL ({name}): send it in the Authorization header. "
                "Treat a key that was sent this way as exposed and roll or revoke it.",
            )


def refusal_of(error: Exception) -> ApiFailure:
    """The error table's answer to what a door's steps or its operation raised (one of
    REFUSED). A database error that retrying cannot cure is raised again, for a 500."""
    if isinstance(error, ApiFailure):
        return error
    if isinstance(error, InvalidInput):
        return ApiFailure("invalid-input", error.message)
    if isinstance(error, NotFound):
        return ApiFailure("not-found", error.message)
    if isinstance(error, DatabaseError) and retryable(error):
        # Dropped in a step before the operation (the key's lookup, its holder's role): a read,
        # nothing written; the operation itself retries (apps/api/operations.py).
        if not transaction_conflict(error):
            connection.close()
        return ApiFailure("unavailable", Retry_After=str(RETRY_AFTER_SECONDS))
    raise error


def operation_run(op: Operation, call: Call, raw_params: dict[str, Any], body: Any) -> Any:
    """Clean the parameters and run the operation; InvalidInput and NotFound pass through."""
    params = {}
    for param in op.params:
        if param.name in raw_params:
            params[param.name] = param.clean(raw_params[param.name])
        elif param.default is not None:
            params[param.name] = param.default
        elif param.location == "path":
            raise InvalidInput(param.name, f"{param.name} is required.")
    return op.run(call, params, body)


def object_of(op: Operation, params: dict[str, Any], record: Any = None) -> str:
    """The object a call created (its record's id) or acted on (the last id in its path), for
    the request log; "" for none."""
    if op.status == 201 and isinstance(record, dict) and record.get("id") is not None:
        return str(record["id"])
    in_path = [p.name for p in op.params if p.location == "path" and p.name in params]
    return str(params[in_path[-1]])[:40] if in_path else ""
