"""addteammember: an operator invites a teammate; the link is accepted like any invitation."""

import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core import mail
from django.core.management import CommandError, call_command

from apps.workspaces.models import Membership
from tests.client import Client
from tests.factories import WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_addteammember_invites_prints_the_link_and_the_invitee_joins_as_admin(
    django_capture_on_commit_callbacks,
):
    workspace = WorkspaceFactory(name="Acme")
    owner_of(workspace)
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "addteammember",
            "--workspace",
            str(workspace.pk),
            "--email",
            "ada@example.com",
            "--role",
            "admin",
            "--base-url",
            "http://testserver",
            stdout=out,
        )
    assert "Invited ada@example.com to 'Acme' as admin" in out.getvalue()
    link = re.search(r"http://testserver(/invitations/\S+)", out.getvalue()).group(1)
    assert link in mail.outbox[0].body
    ada = owner_of(WorkspaceFactory(name="Elsewhere"), email="ada@example.com")
    assert not Membership.objects.filter(workspace=workspace, user=ada).exists()
    browser = Client()
    browser.force_login(ada)
    assert browser.post(link).status_code == 302
    assert Membership.objects.get(workspace=workspace, user=ada).role == "admin"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workspace", "nope", "--email", "a@b.co", "--role", "admin"], "not a workspace id"),
        (
            ["--workspace", "00000000-0000-0000-0000-000000000000", "--email", "a@b.co"]
            + ["--role", "owner"],
            "No workspace has the id",
        ),
    ],
)
def test_addteammember_refuses_bad_arguments(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("addteammember", *args)


def test_addteammember_refuses_a_bad_address_and_role_without_a_traceback(tmp_path):
    workspace = WorkspaceFactory()
    with pytest.raises(CommandError, match="not a valid e-mail"):
        call_command(
            "addteammember", "--workspace", str(workspace.pk), "--email", "nope", "--role", "admin"
        )
    env = {"DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "manage.py", "addteammember", "--workspace", "x", "--email", "a@b.co"]
        + ["--role", "member"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0 and "invalid choice: 'member'" in result.stderr
    assert "Traceback" not in result.stderr
