from django.urls import path

from . import approval_views, export, key_views, views

app_name = "key_pages"

urlpatterns = [
    path("", views.key_list, name="list"),
    path("new/", views.key_create, name="create"),
    path("export.csv", export.key_export, name="export"),
    path("revoke-selected/", views.key_bulk_revoke, name="bulk_revoke"),
    path("waiting/", approval_views.key_waiting, name="waiting"),
    path("decide/", approval_views.key_decide, name="decide"),
    path("keys/<id:key_id>/", key_views.key_detail, name="detail"),
    path("keys/<id:key_id>/details/", key_views.key_details, name="details"),
    path("keys/<id:key_id>/narrow/", key_views.key_narrow, name="narrow"),
    path("keys/<id:key_id>/revoke/", key_views.key_revoke, name="revoke"),
    path("keys/<id:key_id>/roll/", key_views.key_roll, name="roll"),
]
