from django.urls import path

from . import views

app_name = "audit_streams"

urlpatterns = [
    path("", views.stream_list, name="list"),
    path("<int:stream_id>/test/", views.stream_test, name="test"),
    path("<int:stream_id>/pause-or-resume/", views.stream_toggle, name="toggle"),
    path("<int:stream_id>/remove/", views.stream_remove, name="remove"),
]
