from django.urls import path

from . import views

app_name = "devices"

urlpatterns = [
    path("device", views.approve, name="approve"),
]
