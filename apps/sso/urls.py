from django.urls import path

from . import views

app_name = "sso"

urlpatterns = [
    path("sso/", views.sso_find, name="find"),
    path("sso/callback", views.sso_callback, name="callback"),
    path("sso/<uuid:workspace_id>/", views.sso_start, name="start"),
    path("sso/saml/<uuid:workspace_id>/metadata", views.saml_metadata, name="saml_metadata"),
    path("sso/saml/<uuid:workspace_id>/acs", views.saml_acs, name="saml_acs"),
    path("sso/saml/finish", views.saml_finished, name="saml_finish"),
    path("settings/single-sign-on/", views.sso_settings, name="settings"),
]
