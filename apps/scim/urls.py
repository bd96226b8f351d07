from django.urls import path, re_path

from . import views

app_name = "scim"

urlpatterns = [
    path("ServiceProviderConfig", views.provider_config_view, name="provider_config"),
    path("ResourceTypes", views.resource_types_view, name="resource_types"),
    path("ResourceTypes/<str:name>", views.resource_types_view, name="resource_type"),
    path("Schemas", views.schemas_view, name="schemas"),
    path("Schemas/<path:urn>", views.schemas_view, name="schema"),
    path("Users", views.users_view, name="users"),
    path("Users/.search", views.search_view, name="users_search"),
    path(".search", views.search_view, name="search"),
    path("Users/<str:user_id>", views.user_view, name="user"),
    re_path(r"^(?P<rest>.*)$", views.not_found_view, name="not_found"),
]
