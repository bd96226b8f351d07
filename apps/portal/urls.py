from django.urls import path

from apps.key_pages import export as keys_export
from apps.key_pages import key_views
from apps.key_pages import views as keys_views

from . import views

app_name = "portal"

DEVELOPER = "settings/developer/"
KEY = DEVELOPER + "keys/<id:key_id>/"

urlpatterns = [
    path("", views.portal_home, name="home"),
    path(DEVELOPER, keys_views.member_key_list, name="developer"),
    path(DEVELOPER + "new/", keys_views.member_key_create, name="key_create"),
    path(DEVELOPER + "export.csv", keys_export.member_key_export, name="key_export"),
    path(DEVELOPER + "revoke-selected/", keys_views.member_key_bulk_revoke, name="key_bulk_revoke"),
    path(KEY, key_views.member_key_detail, name="key_detail"),
    path(KEY + "details/", key_views.member_key_details, name="key_details"),
    path(KEY + "narrow/", key_views.member_key_narrow, name="key_narrow"),
    path(KEY + "revoke/", key_views.member_key_revoke, name="key_revoke"),
    path(KEY + "roll/", key_views.member_key_roll, name="key_roll"),
]
