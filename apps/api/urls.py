from django.urls import path, re_path

from apps.products.api import products
from apps.workspaces.api import workspace

from . import views

app_name = "api"

urlpatterns = [
    path("v1/workspace", workspace, name="workspace"),
    path("v1/products", products, name="products"),
    path("v1/openapi.json", views.openapi, name="openapi"),
    re_path(r"^(?P<rest>.*)$", views.not_found),
]
