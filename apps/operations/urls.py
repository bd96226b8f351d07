from django.urls import path

from . import views

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
    path("livez", views.livez, name="livez"),
    path("readyz", views.readyz, name="readyz"),
]
