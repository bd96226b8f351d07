"""The discovery documents of the MCP authorization specification: the protected resource
(RFC 9728) that /mcp's 401 points at, and the authorization server (RFC 8414)."""

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from apps.api.scopes import ALL_SCOPES

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource/mcp"


def public_origin(request: HttpRequest) -> str:
    """This server's origin as clients see it: SITE_URL when it is set in the environment
    (production, behind a proxy), else the address the request came to (development)."""
    return settings.OAUTH_ISSUER or f"{request.scheme}://{request.get_host()}"


def mcp_resource(request: HttpRequest) -> str:
    """The MCP endpoint as an RFC 8707 resource: what tokens are issued for."""
    return public_origin(request) + "/mcp"


def resource_metadata_url(request: HttpRequest) -> str:
    return public_origin(request) + PROTECTED_RESOURCE_PATH


def protected_resource_document(request: HttpRequest) -> dict[str, Any]:
    """RFC 9728 for /mcp."""
    return {
        "resource": mcp_resource(request),
        "authorization_servers": [public_origin(request)],
        "scopes_supported": list(ALL_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": "Gatehouse MCP",
    }


def authorization_server_document(request: HttpRequest) -> dict[str, Any]:
    """RFC 8414, with the client ID metadata document support of the MCP specification."""
    origin = public_origin(request)
    return {
        "issuer": origin,
        "authorization_endpoint": f"{origin}/oauth/authorize",
        "token_endpoint": f"{origin}/oauth/token",
        "registration_endpoint": f"{origin}/oauth/register",
        "revocation_endpoint": f"{origin}/oauth/revoke",
        "device_authorization_endpoint": f"{origin}/oauth/device/code",
        "scopes_supported": list(ALL_SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_CODE_GRANT],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": True,
        "service_documentation": f"{origin}/oauth/openapi.json",
    }
