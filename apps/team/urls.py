from django.urls import path

from . import handover_views, service_account_views, views

app_name = "team"

urlpatterns = [
    path("", views.team, name="list"),
    path("<id:membership_id>/", views.team_member_update, name="update"),
    path("<id:membership_id>/remove/", handover_views.team_member_remove, name="remove"),
    path("<id:membership_id>/hand-over/", handover_views.team_member_hand_over, name="hand_over"),
    path("service-accounts/", service_account_views.service_accounts, name="service_accounts"),
    path(
        "service-accounts/<id:account_id>/",
        service_account_views.service_account_detail,
        name="service_account",
    ),
    path(
        "service-accounts/<id:account_id>/delete/",
        service_account_views.service_account_delete_page,
        name="service_account_delete",
    ),
]
