"""The steps every door takes the same way (the HTTP API in config/api.py, MCP in config/mcp.py):
refusing a key sent in the URL, and running an operation from its raw parameters."""

from typing import Any

from django.http import HttpRequest

from apps.api.errors import ApiFailure
from apps.api.operations import Call, Operation
from apps.common.validation import InvalidInput

QUERY_CREDENTIALS = ("access_token", "api_key")


def refuse_query_credentials(request: HttpRequest) -> None:
    """400 for a key sent in the URL: it is exposed in logs and histories, so refuse it."""
    for name in QUERY_CREDENTIALS:
        if name in request.GET:
            raise ApiFailure(
                "invalid-input",
                f"Do not send a key in the URL ({name}): send it in the Authorization header. "
                "Treat a key that was sent this way as exposed and roll or revoke it.",
            )


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
