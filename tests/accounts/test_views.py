import pytest

from apps.accounts.models import User
from apps.workspaces.models import Membership, Workspace
from tests.factories import PASSWORD, MembershipFactory, owner_of

pytestmark = pytest.mark.django_db
GOOD_PASSWORD = "a-much-longer-passphrase-7"


def sign_up(client, **overrides):
    data = {"email": "new@example.com", "password": GOOD_PASSWORD, "workspace_name": "Acme"}
    data.update(overrides)
    return client.post("/sign-up/", data)


def test_sign_up_creates_workspace_and_owner_and_signs_in(client):
    response = sign_up(client)
    assert response.status_code == 302
    assert response["Location"] == "/integrations/api/"
    membership = Membership.objects.get(user__email="new@example.com")
    assert membership.role == "owner"
    assert membership.workspace.name == "Acme"
    assert client.get("/integrations/api/").status_code == 200
    assert User.objects.get().password.startswith("md5$")  # tests' cheap hasher


def test_passwords_are_hashed_with_argon2_outside_tests():
    from django.conf import settings as django_settings
    from django.test import override_settings

    from config import settings as project_settings

    assert project_settings.PASSWORD_HASHERS[0].endswith("Argon2PasswordHasher")
    with override_settings(PASSWORD_HASHERS=project_settings.PASSWORD_HASHERS):
        user = User.objects.create_user(email="argon@example.com", password=GOOD_PASSWORD)
        assert user.password.startswith("argon2")
    assert django_settings.PASSWORD_HASHERS != project_settings.PASSWORD_HASHERS


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"email": "not-an-email"}, "Enter a valid email address"),
        ({"password": "short"}, "too short"),
        ({"password": "password123"}, "too common"),
        ({"workspace_name": "   "}, "required"),
        ({"workspace_name": "x" * 101}, "at most 100"),
    ],
)
def test_sign_up_shows_form_errors_and_creates_nothing(client, overrides, message):
    response = sign_up(client, **overrides)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Workspace.objects.exists()
    assert not User.objects.exists()


def test_sign_up_refuses_a_taken_email(client):
    owner_of(email="new@example.com")
    response = sign_up(client)
    assert "already exists" in response.content.decode()


def test_sign_in_by_email_lands_on_the_workspace(client):
    owner_of(email="owner@example.com")
    response = client.post("/sign-in/", {"username": "Owner@Example.com", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(response["Location"]).url == "/integrations/api/"


def test_wrong_password_gets_a_clear_error(client):
    owner_of(email="owner@example.com")
    response = client.post("/sign-in/", {"username": "owner@example.com", "password": "nope"})
    assert response.status_code == 200
    assert "do not match an account" in response.content.decode()


def test_sign_out_is_a_post(client):
    client.force_login(owner_of())
    assert client.get("/sign-out/").status_code == 405
    assert client.post("/sign-out/").status_code == 302
    assert client.get("/integrations/api/").status_code == 302


def test_password_change(client):
    user = owner_of()
    client.force_login(user)
    response = client.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": GOOD_PASSWORD, "new_password2": GOOD_PASSWORD},
    )
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password(GOOD_PASSWORD)


def test_anonymous_visitor_is_sent_to_sign_in(client):
    for url in ["/", "/integrations/api/", "/integrations/api/new/", "/settings/"]:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/sign-in/")


def test_member_lands_on_the_portal_and_never_sees_the_dashboard(client):
    member = MembershipFactory(role=Membership.Role.MEMBER).user
    client.force_login(member)
    assert client.get("/")["Location"] == "/portal/"
    assert client.get("/communities/").status_code == 403
    assert client.get("/integrations/api/").status_code == 403
    assert client.get("/settings/").status_code == 403


def test_user_without_any_workspace_sees_a_clear_page(client):
    from tests.factories import UserFactory

    client.force_login(UserFactory())
    response = client.get("/")
    assert response.status_code == 403
    assert "No workspace to manage" in response.content.decode()


def test_forms_are_csrf_protected(client):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    assert strict.post("/sign-up/", {"email": "a@b.co"}).status_code == 403
    strict.force_login(owner_of())
    assert strict.post("/settings/", {"name": "x"}).status_code == 403
