from django.urls import path

from . import views

app_name = "communities"

urlpatterns = [
    path("", views.community_list, name="list"),
    path("<id:community_id>/", views.community_detail, name="detail"),
    path(
        "<id:community_id>/members/<id:user_id>/remove/",
        views.community_member_delete,
        name="remove_member",
    ),
]
