from django.urls import path

from . import views

app_name = "request_log"

urlpatterns = [
    path("", views.logs_page, name="page"),
    path("export.csv", views.logs_export, name="export"),
]
