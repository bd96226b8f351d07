from django.urls import path, re_path

from . import discovery, views

app_name = "scim"

urlpatterns = [
    path("ServiceProviderConfig", discovery.provider_config_view, name="provider_config"),
    path("ResourceTypes", discovery.resource_types_view, name="resource_types"),
    path("ResourceTypes/<str:name>", discovery.resource_types_view, name="resource_type"),
    path("Schemas", discovery.schemas_view, name="schemas"),
    path("Schemas/<path:urn>", discovery.schemas_view, name="schema"),
    path("Users", views.users_view, name="users"),
    path("Users/.search", views.search_view, name="users_search"),
    path(".search", views.search_view, name="search"),
    path("Users/<str:user_id>", views.user_view, name="user"),
    re_path(r"^(?P<rest>.*)$", discovery.not_found_view, name="not_found"),
]
