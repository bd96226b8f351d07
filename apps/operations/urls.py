from django.urls import path

from . import health, views

urlpatterns = [
    path("healthz", health.health, name="health"),
    path("metrics", views.metrics, name="metrics"),
    path("livez", views.livez, name="livez"),
    path("readyz", views.readyz, name="readyz"),
]
