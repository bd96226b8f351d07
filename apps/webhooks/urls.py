from django.urls import path

from . import views

app_name = "webhooks"

urlpatterns = [
    path("", views.endpoint_list, name="list"),
    path("<int:endpoint_id>/", views.endpoint_detail, name="detail"),
    path("<int:endpoint_id>/test/", views.endpoint_test, name="test"),
    path("<int:endpoint_id>/roll/", views.endpoint_roll, name="roll"),
    path("<int:endpoint_id>/remove/", views.endpoint_remove, name="remove"),
    path(
        "<int:endpoint_id>/deliveries/<str:message_id>/redeliver/",
        views.delivery_resend,
        name="redeliver",
    ),
]
