from django.urls import path

from . import team_views, views

app_name = "workspaces"

urlpatterns = [
    path("", views.workspace_settings, name="settings"),
    path("team/", team_views.team, name="team"),
    path("team/<id:membership_id>/", team_views.team_member_update, name="team_update"),
    path("team/<id:membership_id>/remove/", team_views.team_member_remove, name="team_remove"),
]
