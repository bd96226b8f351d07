from django.urls import path

from . import pages

app_name = "identity_provider"

urlpatterns = [
    path("", pages.identity_provider, name="page"),
    path("scim-tokens/<int:token_id>/revoke/", pages.token_revoke, name="token_revoke"),
    path("scim-tokens/<int:token_id>/roll/", pages.token_roll, name="token_roll"),
]
