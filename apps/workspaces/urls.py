from django.urls import path

from . import views

app_name = "workspaces"

urlpatterns = [
    path("", views.workspace_settings, name="settings"),
]
