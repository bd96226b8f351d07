from django.urls import path, re_path

from apps.communities.api import communities, posts
from apps.pages.api import pages
from apps.products.api import products
from apps.workspaces.api import workspace

from . import views

app_name = "api"

urlpatterns = [
    path("v1/workspace", workspace, name="workspace"),
    path("v1/products", products, name="products"),
    path("v1/communities", communities, name="communities"),
    path("v1/communities/<int:community_id>/posts", posts, name="posts"),
    path("v1/pages", pages, name="pages"),
    path("v1/openapi.json", views.openapi, name="openapi"),
    re_path(r"^(?P<rest>.*)$", views.not_found),
]
