from django.urls import path

from . import views

app_name = "usage"

urlpatterns = [
    path("", views.usage_page, name="page"),
    path("export.csv", views.usage_export, name="export"),
]
