from django.urls import path

from . import views

app_name = "team"

urlpatterns = [
    path("", views.team, name="list"),
    path("<id:membership_id>/", views.team_member_update, name="update"),
    path("<id:membership_id>/remove/", views.team_member_remove, name="remove"),
]
