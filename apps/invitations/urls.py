from django.urls import path

from . import views

app_name = "invitations"

urlpatterns = [
    path("<str:token>/", views.invitation_open, name="open"),
    path("<id:invitation_id>/resend/", views.invitation_resend_view, name="resend"),
    path("<id:invitation_id>/withdraw/", views.invitation_withdraw_view, name="withdraw"),
]
