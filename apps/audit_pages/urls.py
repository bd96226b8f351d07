from django.urls import path

from . import views

app_name = "audit_pages"

urlpatterns = [
    path("", views.audit_log, name="log"),
    path("export.csv", views.audit_export, name="export"),
]
