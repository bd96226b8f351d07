"""The authentication backend: allauth's, refusing service accounts (docs/product.md §12)."""

from typing import Any

from allauth.account.auth_backends import AuthenticationBackend


class PeopleOnlyBackend(AuthenticationBackend):
    """allauth's backend, for people only: a service account passes no password check and no
    session of one is ever honoured, whichever way it was made."""

    def user_can_authenticate(self, user: Any) -> bool:
        return super().user_can_authenticate(user) and not getattr(
            user, "is_service_account", False
        )
