from django.urls import path

from . import views

app_name = "sso"

urlpatterns = [
    path("sso/", views.sso_find, name="find"),
    path("sso/callback", views.sso_callback, name="callback"),
    path("sso/<uuid:workspace_id>/", views.sso_start, name="start"),
    path("settings/single-sign-on/", views.sso_settings, name="settings"),
]
