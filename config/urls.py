from django.contrib import admin
from django.urls import include, path

from apps.api import views as api_views

urlpatterns = [
    path("api/", include("apps.api.urls")),
    path("healthz", api_views.health, name="health"),
    path("admin/", admin.site.urls),
]
