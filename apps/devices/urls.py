from django.urls import path

from . import views

app_name = "devices"

urlpatterns = [
    path("oauth/device/code", views.device_code, name="device_code"),
    path("oauth/token", views.token, name="token"),
    path("oauth/revoke", views.revoke, name="revoke"),
    path("device", views.approve, name="approve"),
]
