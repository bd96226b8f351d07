from django.urls import path

from apps.api_keys import views as key_views

from . import views

app_name = "portal"

urlpatterns = [
    path("", views.portal_home, name="home"),
    path("settings/developer/", key_views.member_key_list, name="developer"),
    path("settings/developer/new/", key_views.member_key_create, name="key_create"),
    path("settings/developer/export.csv", key_views.member_key_export, name="key_export"),
    path(
        "settings/developer/revoke-selected/",
        key_views.member_key_bulk_revoke,
        name="key_bulk_revoke",
    ),
    path("settings/developer/keys/<id:key_id>/", key_views.member_key_detail, name="key_detail"),
    path(
        "settings/developer/keys/<id:key_id>/revoke/",
        key_views.member_key_revoke,
        name="key_revoke",
    ),
    path("settings/developer/keys/<id:key_id>/roll/", key_views.member_key_roll, name="key_roll"),
]
