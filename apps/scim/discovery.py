"""SCIM's discovery documents (RFC 7644 §4): what Gatehouse offers its identity provider.
Users only: no Groups, no bulk, no sorting, no ETags, each said in the documents."""

from typing import Any

from django.http import HttpRequest
from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    ETag,
    Filter,
    Patch,
    ResourceType,
    ServiceProviderConfig,
    Sort,
    User,
)

from .endpoint import Answer, scim_endpoint
from .models import ScimToken
from .provisioning import ScimRefusal
from .users import USER_SCHEMA, user_schema

MAX_PAGE_SIZE = 200  # a page, when the provider asks for none or more


def service_provider_config() -> ServiceProviderConfig:
    return ServiceProviderConfig(
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_PAGE_SIZE),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[
            AuthenticationScheme(
                type=AuthenticationScheme.Type.oauthbearertoken,
                name="SCIM token",
                description="A SCIM token (gst_…) an owner made in Settings → Single sign-on, "
                "sent as Authorization: Bearer.",
                primary=True,
            )
        ],
    )


def _user_resource_type() -> dict[str, Any]:
    resource = ResourceType.from_resource(User)
    resource.description = "The workspace's owners and admins. Groups are not offered."
    return resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def _schema() -> dict[str, Any]:
    return user_schema().model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def _listing(resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": len(resources),
        "startIndex": 1,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


@scim_endpoint(("GET",))
def provider_config_view(request: HttpRequest, token: ScimToken) -> Answer:
    config = service_provider_config()
    return Answer(200, config.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@scim_endpoint(("GET",))
def resource_types_view(request: HttpRequest, token: ScimToken, name: str = "") -> Answer:
    if not name:
        return Answer(200, _listing([_user_resource_type()]))
    if name != "User":
        raise ScimRefusal(404, None, f"No resource type {name!r}: Gatehouse offers User only.")
    return Answer(200, _user_resource_type())


@scim_endpoint(("GET",))
def schemas_view(request: HttpRequest, token: ScimToken, urn: str = "") -> Answer:
    if not urn:
        return Answer(200, _listing([_schema()]))
    if urn != USER_SCHEMA:
        raise ScimRefusal(404, None, f"No schema {urn!r}: Gatehouse offers {USER_SCHEMA} only.")
    return Answer(200, _schema())


@scim_endpoint(("GET", "POST", "PUT", "PATCH", "DELETE"))
def not_found_view(request: HttpRequest, token: ScimToken, rest: str = "") -> Answer:
    raise ScimRefusal(404, None, "Nothing is at this address: SCIM here offers /Users only.")
