"""What an API operation is: declared once beside its service, read by every door.

Each app lists its operations in `operations.py`. `config/operations.py` collects them, and the
HTTP API (`config/api.py`), the OpenAPI document (`config/openapi.py`) and the MCP tools
(`apps/mcp`, handed the list by `config/mcp.py`) are all built from that one list, so the
three cannot drift apart.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from apps.common.retry import RETRY_AFTER_SECONDS, Unavailable, run_retried
from apps.common.validation import InvalidInput

from .errors import ApiFailure

if TYPE_CHECKING:
    from apps.api_keys.models import ApiKey
    from apps.audit.services import Actor
    from apps.workspaces.models import Workspace

JsonSchema = dict[str, Any]


@dataclass(frozen=True)
class Needs:
    """What a key must hold to run an operation.

    `scope` names the one scope needed; `any_write` accepts any `:write` scope; with neither,
    any active workspace key will do. Member keys are refused unless `members` is set. `roles`
    asks that the key's holder have one of them in the workspace at the moment of the request.
    `creates` names the group an operation adds an object to: a key limited to selected
    objects of that group may not (docs/product.md §2).
    """

    scope: str | None = None
    any_write: bool = False
    members: bool = False
    roles: tuple[str, ...] = ()
    creates: str | None = None

    @property
    def manages_keys(self) -> bool:
        """Whether the operation manages keys (mints, rolls, narrows, revokes, approves, hands
        over, or changes policies, service accounts or streams): what `keys:write` opens, and
        what an old secret in its grace may never do (docs/product.md §2)."""
        return self.scope == "keys:write"


@dataclass(frozen=True)
class Param:
    """A path or query parameter: an integer (an id or a limit), or with `type="string"` a
    string, one of `enum` when that is given (a filter) or up to `max_length` (a cursor)."""

    name: str
    location: Literal["path", "query"]
    description: str
    minimum: int = 1
    maximum: int = 2**63 - 1
    default: int | None = None
    type: Literal["integer", "string"] = "integer"
    enum: tuple[str, ...] = ()
    max_length: int = 200
    # A string's shape, for the document; the operation checks it and words the refusal itself.
    pattern: str | None = None

    @property
    def schema(self) -> JsonSchema:
        schema: JsonSchema
        if self.type == "string":
            schema = {"type": "string", "description": self.description}
            if self.enum:
                schema["enum"] = list(self.enum)
            else:
                schema.update(minLength=1, maxLength=self.max_length)
            if self.pattern:
                schema["pattern"] = self.pattern
            return schema
        schema = {
            "type": "integer",
            "minimum": self.minimum,
            "maximum": self.maximum,
            "description": self.description,
        }
        if self.default is not None:
            schema["default"] = self.default
        return schema

    @property
    def required(self) -> bool:
        return self.location == "path"

    def clean(self, value: Any) -> Any:
        """The parameter as an integer in range (strings of ASCII digits, as URLs carry them,
        are accepted), or a string parameter's value checked."""
        if self.type == "string":
            return self._clean_string(value)
        # At most 19 digits: int() of thousands of digits raises (Python's own limit), and no
        # value in range is longer.
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(self.name, f"{self.name} must be a whole number.")
        if not self.minimum <= value <= self.maximum:
            raise InvalidInput(
                self.name,
                f"{self.name} must be a whole number from {self.minimum} to {self.maximum}.",
            )
        return value

    def _clean_string(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise InvalidInput(self.name, f"{self.name} must be a non-empty string.")
        if self.enum and value not in self.enum:
            raise InvalidInput(self.name, f"{self.name} must be one of {', '.join(self.enum)}.")
        if len(value) > self.max_length or not value.isprintable():
            raise InvalidInput(self.name, f"{self.name} is not a valid value.")
        return value


@dataclass(frozen=True)
class Call:
    """Who runs an operation: the authenticated key, its workspace, and the audit actor."""

    key: "ApiKey"
    workspace: "Workspace"
    actor: "Actor"


@dataclass(frozen=True)
class Operation:
    """One operation of the API, as every door sees it.

    `run(call, params, body)` calls the service and returns the JSON record; it raises
    InvalidInput (400) or NotFound (404). `params` holds the cleaned path and query parameters;
    `body` the decoded JSON body (None for operations without one). An operation of status
    204 answers HTTP with no body; its record is what MCP and the CLI show.
    """

    name: str  # snake_case: the MCP tool's name; its camelCase twin is the OpenAPI operationId
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str  # under /api/v1, with {param} placeholders as OpenAPI writes them
    needs: Needs
    title: str
    summary: str  # one sentence a person or a model can act on
    output_name: str  # the component name of the output schema in the OpenAPI document
    output: JsonSchema
    run: Callable[[Call, dict[str, Any], Any], dict[str, Any]]
    body_name: str | None = None
    body: JsonSchema | None = None
    params: tuple[Param, ...] = ()
    status: int = 200
    can_be_not_found: bool = False
    # Whether the operation answers 409 conflict for an object in the wrong state.
    can_conflict: bool = False
    # The terminal's spelling: `gatehouse <group> <verb>` (default: the name's noun, plural,
    # and its verb: list_products is `products list`), and flags for body fields whose
    # kebab-case name would read badly (`{"workspaceName": "name"}` gives --name).
    cli: str | None = None
    cli_flags: dict[str, str] = field(default_factory=dict)
    # The columns `gatehouse <group> list` shows (default: every short field of the record),
    # and what the CLI says after an operation that answers 204 ({param} filled in).
    # A column may name its form after a colon: `expiresAt:day` (the day alone), `lastUsedAt:ago`
    # (how long ago); `--wide` shows every short field, times in full.
    cli_columns: tuple[str, ...] = ()
    cli_done: str | None = None
    # Query values the command sends unless its option is given or `--all` is: what the
    # dashboard's list opens on (`keys list` shows the keys that work or wait).
    cli_defaults: dict[str, str] = field(default_factory=dict)
    # False for operations that hand out a secret: secrets never pass through MCP.
    mcp: bool = True

    def __post_init__(self) -> None:
        # Every door runs an operation through `run`: a write whose connection dropped is
        # retried here. A read needs no watch of its commits on the hot path: a drop is 503
        # `unavailable` at the door, and the client's retry is as safe as ours.
        if self.method != "GET":
            object.__setattr__(self, "run", _retried(self.run))

    @property
    def operation_id(self) -> str:
        first, *rest = self.name.split("_")
        return first + "".join(word.title() for word in rest)


UNSURE = (
    "The database dropped the connection as the change was being committed, so it may or may "
    "not have been made: read it back before trying again."
)


def _retried(
    run: Callable[[Call, dict[str, Any], Any], dict[str, Any]],
) -> Callable[[Call, dict[str, Any], Any], dict[str, Any]]:
    """`run`, once more on a fresh connection when the database dropped the first one before
    anything was committed (the key and workspace read again, the body as it came); when that
    fails too, or the drop came with the COMMIT, 503 `unavailable` with Retry-After."""

    def attempt(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
        def reload() -> None:
            call.key.refresh_from_db()
            call.workspace.refresh_from_db()

        try:
            return run_retried(lambda: run(call, params, copy.deepcopy(body)), before_retry=reload)
        except Unavailable as error:
            raise ApiFailure(
                "unavailable",
                UNSURE if error.unsure else None,
                Retry_After=str(RETRY_AFTER_SECONDS),
            ) from error

    return attempt


class NotFound(Exception):
    """The object an operation names does not exist for this key."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def body_fields(body: Any, schema: JsonSchema) -> dict[str, Any]:
    """A body holding exactly the fields of `schema`: all the required ones and nothing else.

    Types and values are left to the service's validators; this only checks the shape, naming
    every unknown field, or else every missing one, in one sentence.
    """
    if not isinstance(body, dict):
        raise InvalidInput("body", "The request body must be a JSON object.")
    known = schema["properties"]
    unknown = [name for name in body if name not in known]
    if unknown:
        fields = _listed(unknown)
        verb = "is not a known field" if len(unknown) == 1 else "are not known fields"
        raise InvalidInput(unknown[0], f"{fields} {verb}.")
    missing = [name for name in schema.get("required", ()) if name not in body]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise InvalidInput(missing[0], f"{_listed(missing)} {verb} required.")
    return body


def _listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def object_schema(properties: dict[str, JsonSchema], *, required: bool = True) -> JsonSchema:
    """A closed JSON object; with `required`, every property must be present (records)."""
    schema: JsonSchema = {"type": "object", "additionalProperties": False}
    if required:
        schema["required"] = list(properties)
    schema["properties"] = properties
    return schema


def list_schema(item: JsonSchema) -> JsonSchema:
    """The `{"data": [...]}` envelope of every list operation."""
    return object_schema({"data": {"type": "array", "items": item}})


LIMIT = Param(
    "limit",
    "query",
    "How many to return, newest first: 1 to 100 (default 50).",
    maximum=100,
    default=50,
)
