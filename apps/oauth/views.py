"""The authorization server's HTTP doors: discovery, token, device code, registration and
revocation. Authlib answers each; these views add the limits per address and the headers."""

import json
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from apps.common.http import client_ip, has_nul
from apps.common.wording import pluralize
from apps.metering.limits import rate_limit_take

from .clients import DEVICE_CODE_GRANT, documents_fetched_for
from .grants import error_text
from .metadata import authorization_server_document, protected_resource_document
from .registration import Registration
from .server import SERVER, CliDeviceAuthorization, endpoint_answer


def _public_json(data: dict[str, object]) -> JsonResponse:
    """A discovery document: readable from any web page (browser-based MCP clients)."""
    response = JsonResponse(data)
    response["Access-Control-Allow-Origin"] = "*"
    response["Cache-Control"] = "public, max-age=3600"
    return response


@require_GET
def protected_resource(request: HttpRequest) -> JsonResponse:
    """GET /.well-known/oauth-protected-resource/mcp (RFC 9728)."""
    return _public_json(protected_resource_document(request))


@require_GET
def authorization_server(request: HttpRequest) -> JsonResponse:
    """GET /.well-known/oauth-authorization-server (RFC 8414)."""
    return _public_json(authorization_server_document(request))


def _oauth_error(error: str, description: str, status: int = 400) -> JsonResponse:
    response = JsonResponse({"error": error, "error_description": description}, status=status)
    response["Cache-Control"] = "no-store"
    return response


def _too_many(
    bucket: str, per_minute: int, what: str, error: str = "slow_down"
) -> JsonResponse | None:
    limit = rate_limit_take(bucket, per_minute)
    if limit is None or not limit.refused:
        return None
    response = _oauth_error(
        error,
        f"Too many {what} from this address; try again in {limit.retry_after} "
        f"second{pluralize(limit.retry_after)}.",
        429,
    )
    response["Retry-After"] = str(limit.retry_after)
    return response


GRANT_TYPES = ("authorization_code", "refresh_token", DEVICE_CODE_GRANT)
# What programs call, answered without the browser middleware (apps/api/middleware.py).
MACHINE_PATHS = (
    "/oauth/token",
    "/oauth/device/code",
    "/oauth/register",
    "/oauth/revoke",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
)


def machine_error(message: str, status: int) -> HttpResponse:
    """A refusal on a machine path before its view runs, or its unexpected error, in OAuth's
    JSON (RFC 6749 §5.2; `server_error` for a 5xx, as §4.1.2.1 names it)."""
    error = "server_error" if status >= 500 else "invalid_request"
    return _cors(_oauth_error(error, message, status))


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 400 (a Host this server does not serve, another suspicious request): OAuth's
    JSON for the endpoints programs call and the discovery documents, the page for people."""
    if request.path in MACHINE_PATHS or request.path.startswith("/.well-known/"):
        described = (
            "The Host header names a host this server does not serve."
            if isinstance(exception, DisallowedHost)
            else "The request is not one this server takes."
        )
        return _cors(_oauth_error("invalid_request", described))
    return defaults.bad_request(request, exception)


def _basic_refused() -> HttpResponse:
    """RFC 6749 §5.2: client authentication by a scheme the client could not use is 401
    invalid_client with the scheme's challenge. Every client here is public (no secret)."""
    response = _oauth_error(
        "invalid_client",
        "Clients here are public: send client_id in the form, not an Authorization header.",
        status=401,
    )
    response["WWW-Authenticate"] = 'Basic realm="oauth"'
    return _cors(response)


def oauth_endpoint(
    view: Callable[[HttpRequest], HttpResponse], *, client_authentication: bool = True
) -> Callable[..., HttpResponse]:
    """POST only, no CSRF (no cookie is trusted here), and every refusal in OAuth's JSON:
    another method, a body too big or with too many fields, an address Authlib cannot word,
    Basic client credentials where a client authenticates. Client metadata documents
    fetched on the way count against the caller's address."""

    @csrf_exempt
    @wraps(view)
    def wrapper(request: HttpRequest) -> HttpResponse:
        if request.method == "OPTIONS":  # a browser-based client's CORS preflight
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "POST"
            response["Access-Control-Allow-Headers"] = "Content-Type, Authorization"
            response["Access-Control-Max-Age"] = "86400"
            return _cors(response)
        if request.method != "POST":
            response = _oauth_error("invalid_request", "Use POST.", status=405)
            response["Allow"] = "POST, OPTIONS"
            return response
        try:
            request.body  # noqa: B018 - read here, so its limits answer in JSON
            request.POST  # noqa: B018 - parsed from the body just read
        except (RequestDataTooBig, TooManyFieldsSent):
            return _oauth_error("invalid_request", "The request body is too large.", status=413)
        except MultiPartParserError:
            return _oauth_error("invalid_request", "The request body cannot be read.")
        if has_nul(request.POST) or has_nul(request.GET):
            # No parameter of OAuth may hold one, and PostgreSQL's text refuses it.
            return _cors(_oauth_error("invalid_request", "A parameter holds a NUL character."))
        scheme = request.headers.get("Authorization", "").split(" ", 1)[0].lower()
        if client_authentication and scheme == "basic":
            return _basic_refused()
        if repeated := sorted(k for k, values in request.POST.lists() if len(values) > 1):
            # RFC 6749 §3.1: a parameter sent twice is refused, not read one way or the other.
            return _oauth_error("invalid_request", f"{error_text(repeated[0])} is sent twice.")
        try:
            # Only the consent page fetches client metadata documents: an endpoint a program
            # calls without a person must not hold a worker waiting on another server.
            with documents_fetched_for(client_ip(request), fetch=False):
                return view(request)
        except ValueError:  # Authlib refuses to word an error quoting a malformed value
            return _oauth_error("invalid_request", "A parameter is malformed.")

    return wrapper


def _cors(response: HttpResponse) -> HttpResponse:
    """Token, registration and revocation answers readable by browser-based clients (they
    carry no cookie: nothing here trusts the browser's session)."""
    response["Access-Control-Allow-Origin"] = "*"
    return response


@oauth_endpoint
def token(request: HttpRequest) -> HttpResponse:
    """POST /oauth/token: the authorization code, refresh token and device code grants,
    limited per client address (a device login polls every 5 s: 12 a minute)."""
    refused = _too_many(
        f"oauth-token:{client_ip(request)}",
        settings.OAUTH_TOKEN_REQUESTS_PER_MINUTE,
        "token requests",
        error="temporarily_unavailable",
    )
    if refused is not None:
        return _cors(refused)
    grant_type = request.POST.get("grant_type")
    if not grant_type:
        return _cors(_oauth_error("invalid_request", "grant_type is missing."))
    if grant_type not in GRANT_TYPES:
        return _cors(
            _oauth_error(
                "unsupported_grant_type",
                f"grant_type {error_text(grant_type[:100])} is not supported: use "
                "authorization_code, refresh_token or the device code grant.",
            )
        )
    response = SERVER.create_token_response(request)
    if grant_type == DEVICE_CODE_GRANT and response.status_code == 400:
        if json.loads(response.content).get("error") in ("authorization_pending", "slow_down"):
            # A device login's poll before the browser answers is the protocol (RFC 8628
            # §3.5), not a bad request: no "Bad Request" WARNING every 5 s in the log.
            response._has_been_logged = True  # Django's own mark: log_response skips it
    return _cors(response)


@oauth_endpoint
def device_code(request: HttpRequest) -> HttpResponse:
    """POST /oauth/device/code (RFC 8628 §3.1-3.2), limited per client address."""
    refused = _too_many(
        f"device-code:{client_ip(request)}", settings.DEVICE_CODES_PER_MINUTE, "login requests"
    )
    return refused or endpoint_answer(CliDeviceAuthorization(request), request)


def _register(request: HttpRequest) -> HttpResponse:
    """POST /oauth/register (RFC 7591), limited per client address."""
    refused = _too_many(
        f"oauth-register:{client_ip(request)}",
        settings.OAUTH_REGISTRATIONS_PER_MINUTE,
        "registrations",
        # slow_down belongs to device polling (RFC 8628); RFC 7591 names no error for this.
        error="temporarily_unavailable",
    )
    return _cors(refused or endpoint_answer(Registration(request), request))


# An Authorization header here would carry an initial access token (RFC 7591 §3), not a
# client's credentials: registration is open, so it is not read.
register = oauth_endpoint(_register, client_authentication=False)


@oauth_endpoint
def revoke(request: HttpRequest) -> HttpResponse:
    """POST /oauth/revoke (RFC 7009): `gatehouse logout`, or an app disconnecting itself."""
    return _cors(SERVER.create_endpoint_response("revocation", request))
