from django.urls import path

from . import views

app_name = "key_health"

urlpatterns = [
    path("", views.key_health, name="page"),
    path("<slug:slug>/act/", views.key_health_act, name="act"),
]
