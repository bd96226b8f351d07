"""A teammate as the identity provider sees them: the SCIM User resource (RFC 7643 §4.1) of a
workspace's owners and admins, its schema as Gatehouse keeps it, and its filters.

The schemas, parsing and PATCH come from scim2-models and the filter grammar from
scim2-filter-parser; this module only says which of our columns each attribute is.
"""

from typing import Any

from django.db.models import BooleanField, CharField, ExpressionWrapper, F, Q, QuerySet, Value
from django.db.models.functions import Coalesce, NullIf
from scim2_filter_parser.lexer import SCIMLexer
from scim2_filter_parser.parser import SCIMParser, SCIMParserError
from scim2_filter_parser.transpilers.django_q_object import Transpiler
from scim2_models import (
    Email,
    InvalidFilterException,
    Meta,
    Name,
    Required,
    Schema,
    ScimPolicy,
    User,
)

from apps.workspaces.models import Membership, Workspace
from apps.workspaces.selectors import STAFF_ROLES

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
# The attributes Gatehouse keeps; a provider may send others (phone numbers, the enterprise
# extension, …): they are accepted and not kept, and the /Schemas document says which are.
KEPT = ("userName", "name", "displayName", "active", "emails")
NAME_PARTS = ("formatted", "familyName", "givenName")
EMAIL_PARTS = ("value", "type", "primary")
# Okta's and Entra's bodies as they come: unknown attributes and extensions ignored, Entra's
# `remove` with a value read as a filter, a filtered path with no match creating the entry.
POLICY = ScimPolicy(
    unknown=ScimPolicy.Unknown.ignore,
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)


def user_schema() -> Schema:
    """The core User schema as Gatehouse keeps it: the kept attributes only. An e-mail address
    is required (it is how a person signs in and hears of their keys), and so is `active`."""
    schema = User.to_schema()
    kept = []
    for attribute in schema.attributes or []:
        if attribute.name not in KEPT:
            continue
        if attribute.name == "name":
            attribute.sub_attributes = [
                part for part in attribute.sub_attributes or [] if part.name in NAME_PARTS
            ]
        if attribute.name == "emails":
            attribute.sub_attributes = [
                part for part in attribute.sub_attributes or [] if part.name in EMAIL_PARTS
            ]
            for part in attribute.sub_attributes:
                if part.name == "value":
                    part.required = Required.true
        if attribute.name in ("emails", "active"):
            attribute.required = Required.true
        kept.append(attribute)
    schema.attributes = kept
    return schema


def team_of(workspace: Workspace) -> QuerySet[Membership]:
    """Everyone SCIM sees in `workspace`: its owners and admins, never a service account, each
    annotated with the userName and active state filters compare."""
    return (
        Membership.objects.filter(
            workspace=workspace, role__in=STAFF_ROLES, user__is_service_account=False
        )
        .select_related("user")
        .annotate(
            scim_name=Coalesce(
                NullIf(F("scim_user_name"), Value("")),
                F("user__email"),
                output_field=CharField(),
            ),
            scim_active=ExpressionWrapper(
                Q(suspended_at__isnull=True), output_field=BooleanField()
            ),
        )
        .order_by("pk")
    )


def membership_to_user(membership: Membership, location: str) -> "User[Any]":
    """The SCIM record of a teammate: as the provider last wrote it, or, for someone it never
    wrote (an owner who made the workspace, someone invited), as Gatehouse knows them."""
    account, profile = membership.user, membership.scim_profile
    if profile:
        name = Name(**profile["name"]) if profile.get("name") else None
        display_name = profile.get("displayName")
        emails = [_email(**email) for email in profile.get("emails") or []]
    else:
        name = Name(formatted=account.full_name) if account.full_name else None
        display_name = account.full_name or None
        emails = [_email(value=account.email, type="work", primary=True)]
    return User(
        id=str(membership.pk),
        external_id=membership.external_id or None,
        user_name=membership.scim_user_name or account.email,
        name=name,
        display_name=display_name,
        emails=emails or None,
        active=membership.suspended_at is None,
        meta=Meta(
            resource_type="User",
            created=membership.created_at,
            last_modified=membership.updated_at,
            location=location,
        ),
    )


def _email(**parts: Any) -> Email:
    """An address as kept, not checked again: the account's address was checked when it was
    made (and a domain scim2-models' validator refuses, such as example.test, is still one)."""
    if "type" in parts:
        known = {member.value for member in Email.Type}
        parts["type"] = Email.Type(parts["type"]) if parts["type"] in known else parts["type"]
    return Email.model_construct(**parts)


def profile_of(user: "User[Any]") -> dict[str, Any]:
    """What is kept of a written record besides userName, externalId and active: its name,
    display name and addresses, as sent (only the parts Gatehouse keeps)."""
    profile: dict[str, Any] = {"schemas": [USER_SCHEMA]}
    if user.name is not None:
        parts = {part: getattr(user.name, _snake(part)) for part in NAME_PARTS}
        if kept := {part: value for part, value in parts.items() if value is not None}:
            profile["name"] = kept
    if user.display_name is not None:
        profile["displayName"] = user.display_name
    if user.emails:
        profile["emails"] = [
            {
                part: (str(value) if part == "type" else value)
                for part in EMAIL_PARTS
                if (value := getattr(email, part)) is not None
            }
            for email in user.emails
        ]
    return profile


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def full_name_of(user: "User[Any]") -> str:
    """The name Gatehouse shows: the formatted one, else given and family, else display."""
    if user.name is not None:
        if user.name.formatted:
            return user.name.formatted
        parts = [user.name.given_name, user.name.family_name]
        if joined := " ".join(part for part in parts if part):
            return joined
    return user.display_name or ""


def email_of(user: "User[Any]") -> str | None:
    """The address the record gives: its primary e-mail, else its first, else a userName
    that is an address."""
    emails = [email for email in user.emails or [] if email.value]
    primary = next((email for email in emails if email.primary), emails[0] if emails else None)
    if primary is not None:
        return str(primary.value)
    if user.user_name and "@" in user.user_name:
        return user.user_name
    return None


# Filters (RFC 7644 §3.4.2.2) over the kept attributes; `emails.type` and `emails.primary`
# narrow nothing here (everyone has one address), any other attribute is refused.
_FILTERED = {
    ("userName", None, None): "scim_name",
    ("externalId", None, None): "external_id",
    ("emails", None, None): "user.email",
    ("emails", "value", None): "user.email",
    ("displayName", None, None): "user.full_name",
    ("name", "formatted", None): "user.full_name",
    ("active", None, None): "scim_active",
}
_NARROWS_NOTHING = {("emails", "type", None), ("emails", "primary", None)}


class _Strict(Transpiler):
    def visit_AttrPath(self, node: Any) -> Any:  # noqa: N802 - the library's visitor name
        mapped = super().visit_AttrPath(node)
        if mapped is None:
            path = (
                str(node.attr_name).lower(),
                node.sub_attr.value.lower() if node.sub_attr else None,
                node.uri.lower() if node.uri else None,
            )
            if path not in {_lower(known) for known in _NARROWS_NOTHING}:
                raise InvalidFilterException(
                    detail=f"Users cannot be filtered by {node.attr_name}: filter by userName, "
                    "externalId, emails, displayName or active."
                )
        return mapped


def _lower(path: tuple[str | None, ...]) -> tuple[str | None, ...]:
    return tuple(part.lower() if part else None for part in path)


def filter_condition(text: str) -> Q:
    """The condition of a SCIM filter such as `userName eq "ana@example.com"`;
    InvalidFilterException for a filter that does not parse or names an attribute not kept."""
    try:
        tree = SCIMParser().parse(SCIMLexer().tokenize(text))
    except (SCIMParserError, ValueError) as error:
        raise InvalidFilterException(detail=f"The filter does not parse: {error}") from None
    condition = _Strict(_FILTERED).transpile(tree)
    if condition is None:
        raise InvalidFilterException(detail="The filter names no attribute that can be filtered.")
    return condition
