import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.accounts.models import User
from apps.api_keys.models import ApiKey
from apps.workspaces.models import Membership, Workspace
from tests.conftest import auth
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def run(*args) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_createworkspace_prints_the_id_last_and_makes_an_owner():
    lines = run(
        "createworkspace",
        "Acme Academy",
        "--owner",
        "Owner@Acme.test",
        "--password",
        "a-long-test-password-42",
    )
    workspace = Workspace.objects.get(pk=lines[-1])
    assert workspace.name == "Acme Academy"
    membership = Membership.objects.get(workspace=workspace)
    assert membership.user.email == "owner@acme.test"
    assert membership.role == "owner"
    assert membership.user.check_password("a-long-test-password-42")


@pytest.mark.parametrize(
    "args, message",
    [
        (["", "--owner", "a@example.com"], "name must not be empty"),
        (["Acme", "--owner", "not-an-email"], "not a valid e-mail"),
        (["Acme", "--owner", "a@example.com", "--password", "123"], "too short"),
    ],
)
def test_createworkspace_refuses_bad_arguments(args, message):
    with pytest.raises(CommandError, match=message):
        run("createworkspace", *args)
    assert not Workspace.objects.exists()
    assert not User.objects.exists()


def test_createworkspace_keeps_an_existing_users_password():
    user = owner_of()
    with pytest.raises(CommandError, match="already has an account"):
        run("createworkspace", "Second", "--owner", user.email, "--password", "whatever-123-x")
    run("createworkspace", "Second", "--owner", user.email)
    assert user.memberships.count() == 2


def test_createapikey_prints_a_working_secret_last(client):
    owner = owner_of()
    workspace = owner.memberships.get().workspace
    lines = run(
        "createapikey",
        "--workspace",
        str(workspace.pk),
        "--user",
        owner.email,
        "--name",
        "Zapier",
        "--scopes",
        "products:read, pages:write",
    )
    secret = lines[-1]
    assert secret.startswith("gwk_")
    assert secret not in "\n".join(lines[:-1])
    key = ApiKey.objects.get()
    assert key.scopes == ["pages:write", "products:read"]
    assert abs(key.expires_at - (timezone.now() + timedelta(days=365))) < timedelta(minutes=1)
    assert client.get("/api/v1/workspace", **auth(secret)).status_code == 200


@pytest.mark.parametrize(
    "extra, expected_days",
    [
        (["--expires-in", "7"], 7),
        (["--expires-at", "2099-01-01"], None),
        (["--no-expiry"], None),
        (["--cli"], 90),
    ],
)
def test_createapikey_expiry_options(extra, expected_days):
    owner = owner_of()
    workspace = owner.memberships.get().workspace
    args = [
        "createapikey",
        "--workspace",
        str(workspace.pk),
        "--user",
        owner.email,
        "--name",
        "k",
        "--scopes",
        "pages:read",
        *extra,
    ]
    if extra[0] == "--expires-at":
        with pytest.raises(CommandError, match="365 days"):
            run(*args)
        return
    run(*args)
    key = ApiKey.objects.get()
    if expected_days is None:
        assert key.expires_at is None
    else:
        delta = key.expires_at - timezone.now()
        assert timedelta(days=expected_days) - timedelta(minutes=1) < delta
        assert delta <= timedelta(days=expected_days)
    assert key.is_cli == (extra == ["--cli"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--workspace": "nope"}, "not a workspace id"),
        ({"--workspace": "00000000-0000-0000-0000-000000000000"}, "No workspace"),
        ({"--user": "stranger@example.com"}, "is not a user of workspace"),
        ({"--scopes": "products:read,admin:all"}, "admin:all"),
        ({"--scopes": ","}, "at least one"),
        ({"--name": " "}, "name must not be empty"),
        ({"--expires-in": "0"}, "between 1 and 365"),
        ({"--expires-in": "366"}, "between 1 and 365"),
        ({"--expires-at": "tomorrow"}, "ISO 8601"),
        ({"--expires-at": "2001-01-01T00:00:00Z"}, "future"),
    ],
)
def test_createapikey_refuses_bad_arguments(change, message):
    owner = owner_of()
    options = {
        "--workspace": str(owner.memberships.get().workspace.pk),
        "--user": owner.email,
        "--name": "k",
        "--scopes": "pages:read",
    }
    options.update(change)
    args = [item for pair in options.items() for item in pair]
    with pytest.raises(CommandError, match=message):
        run("createapikey", *args)
    assert not ApiKey.objects.exists()


def test_createapikey_refuses_cli_with_an_expiry():
    owner = owner_of()
    with pytest.raises(CommandError, match="90 days"):
        run(
            "createapikey",
            "--workspace",
            str(owner.memberships.get().workspace.pk),
            "--user",
            owner.email,
            "--name",
            "k",
            "--scopes",
            "pages:read",
            "--cli",
            "--expires-in",
            "5",
        )


def test_revokeapikey_revokes_the_leaked_key(client):
    created = make_key()
    lines = run("revokeapikey", created.secret)
    assert "Revoked" in lines[-1]
    assert created.secret not in "\n".join(lines)
    response = client.get("/api/v1/workspace", **auth(created.secret))
    assert response.json()["error"] == "revoked-key"
    assert "already revoked" in run("revokeapikey", created.secret)[-1]


def test_revokeapikey_with_the_old_secret_of_a_rolling_key_revokes_the_key(client):
    from datetime import timedelta

    from apps.api_keys.rolling import api_key_roll
    from apps.audit.services import Actor

    created = make_key()
    rolled = api_key_roll(
        key=created.key, grace=timedelta(days=7), actor=Actor.of_user(created.key.user)
    )
    assert "Revoked" in run("revokeapikey", created.secret)[-1]
    for secret in (created.secret, rolled.secret):
        assert client.get("/api/v1/workspace", **auth(secret)).json()["error"] == "revoked-key"


@pytest.mark.parametrize("secret", ["gwk_" + "a" * 38, "garbage"])
def test_revokeapikey_refuses_an_unknown_secret_without_echoing_it(secret):
    with pytest.raises(CommandError, match="No key matches") as error:
        run("revokeapikey", secret)
    assert secret not in str(error.value)


def test_bad_arguments_exit_non_zero_without_a_traceback(tmp_path):
    env = {"DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    for args in (
        ["createapikey", "--workspace", "x", "--user", "a@b.c", "--name", "n", "--scopes", "x"],
        ["revokeapikey", "gwk_nothing"],
        ["createworkspace", "Acme"],
    ):
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        assert result.stderr.strip()
