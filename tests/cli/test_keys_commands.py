"""`gatehouse keys ...` as a subprocess against a live server."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from tests.factories import make_key, owner_of

from .test_cli import env, run  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def manager_env(env, live_server):  # noqa: F811
    owner = owner_of(email="owner@example.com")
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")
    env.update(GATEHOUSE_API_KEY=manager.secret, GATEHOUSE_URL=live_server.url)
    return env


def test_keys_create_prints_the_secret_once_on_stdout_only(manager_env):
    result = run(
        manager_env,
        "--json",
        "keys",
        "create",
        "--name",
        "Deploy",
        "--scopes",
        "pages:read,products:read",
        "--expires-in-days",
        "30",
        "--restrictions",
        '{"networks": ["10.0.0.1"], "rateLimitPerMinute": 60}',
    )
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["scopes"] == ["pages:read", "products:read"]
    assert record["restrictions"]["networks"] == ["10.0.0.1/32"]
    assert record["secret"].startswith("gwk_")
    assert record["secret"] not in result.stderr
    assert "shown only this once" not in result.stdout
    key = ApiKey.objects.get(pk=record["id"])
    assert key.rate_limit_per_minute == 60

    human = run(manager_env, "keys", "create", "--name", "Other", "--scopes", "pages:read")
    assert human.returncode == 0, human.stderr
    assert human.stdout.count("gwk_") == 2  # the secret, and the hint beside it
    assert "shown only this once" in human.stderr


def test_keys_list_show_narrow_roll_and_revoke(manager_env):
    target = make_key(
        user=ApiKey.objects.get(name="Manager").user,
        scopes=["pages:read", "pages:write"],
        expires_in=timedelta(days=30),  # not outliving the manager's key, which rolls it
    )
    listed = run(manager_env, "keys", "list", "--state", "active")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split()[:3] == ["ID", "NAME", "HINT"]
    assert target.key.hint in listed.stdout and target.secret not in listed.stdout

    shown = run(manager_env, "keys", "show", str(target.key.pk))
    assert "Scopes last used" in shown.stdout

    narrowed = run(manager_env, "keys", "narrow", str(target.key.pk), "--scopes", "pages:read")
    assert narrowed.returncode == 0, narrowed.stderr
    assert ApiKey.objects.get(pk=target.key.pk).scopes == ["pages:read"]
    widened = run(manager_env, "keys", "narrow", str(target.key.pk), "--scopes", "pages:write")
    assert widened.returncode == 1 and "would widen" in widened.stderr

    rolled = run(manager_env, "--json", "keys", "roll", str(target.key.pk))
    assert rolled.returncode == 0, rolled.stderr
    assert json.loads(rolled.stdout)["secret"] != target.secret

    revoked = run(manager_env, "keys", "revoke", str(target.key.pk))
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.strip() == (
        f"Revoked key {target.key.pk}; it fails from the next request on."
    )
    assert ApiKey.objects.get(pk=target.key.pk).revoked_at is not None
    state = run(manager_env, "keys", "list", "--state", "sleeping")
    assert state.returncode == 2 and "sleeping" in state.stderr  # click names the choices


def test_keys_list_points_at_the_next_page(manager_env):
    owner = ApiKey.objects.get(name="Manager").user
    for number in range(3):
        make_key(user=owner, name=f"K{number}")
    first = run(manager_env, "keys", "list", "--limit", "2")
    assert "More: gatehouse keys list --cursor " in first.stderr
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    second = run(manager_env, "keys", "list", "--limit", "2", "--cursor", cursor)
    names = [line.split()[1] for line in second.stdout.splitlines()[1:]]
    assert names == ["K0", "Manager"]


def test_keys_show_writes_times_as_keys_list_does(manager_env):
    manager = ApiKey.objects.get(name="Manager")
    manager.expires_at = manager.created_at + timedelta(days=30)
    manager.save(update_fields=["expires_at"])
    shown = run(manager_env, "keys", "show", str(manager.pk))
    assert shown.returncode == 0, shown.stderr
    listed = run(manager_env, "keys", "list", "--wide").stdout
    expires = re.search(r"^Expires at +(.+)$", shown.stdout, re.M).group(1)
    assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}, 20\d\d \d\d:\d\d \S+", expires), expires
    assert expires in listed  # the same words in both
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", shown.stdout)  # no raw ISO time left


def test_keys_requests_names_each_requests_operation(manager_env):
    manager = ApiKey.objects.get(name="Manager")
    assert run(manager_env, "products", "list").returncode == 0
    table = run(manager_env, "keys", "requests", str(manager.pk)).stdout.splitlines()
    assert "OPERATION" in table[0].split()
    assert any(" list_products " in f" {row} " for row in table[1:]), table


def _add_admin(workspace, email):
    from apps.workspaces.models import Membership
    from tests.factories import UserFactory

    user = UserFactory(email=email)
    Membership.objects.create(workspace=workspace, user=user, role=Membership.Role.ADMIN)
    return user


def test_keys_list_fits_100_columns_shows_last_use_and_hides_what_no_longer_works(manager_env):
    manager = ApiKey.objects.get(name="Manager")
    workspace = manager.workspace
    person = _add_admin(workspace, "a.very.long.address.for.a.person@integrations.example.com")
    wordy = make_key(user=person, name="Nightly export of every order to the warehouse (prod)")
    ApiKey.objects.filter(pk=wordy.key.pk).update(
        last_used_at=timezone.now() - timedelta(hours=2, minutes=40)
    )
    gone = make_key(user=person, name="Old revoked key")
    ApiKey.objects.filter(pk=gone.key.pk).update(revoked_at=timezone.now())
    denied = make_key(user=person, name="Denied key")
    ApiKey.objects.filter(pk=denied.key.pk).update(
        approval_requested_at=timezone.now(), denied_at=timezone.now()
    )

    listed = run(manager_env, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, "\n".join(lines)
    header = lines[0]
    assert "LAST USED" in header and "EXPIRES" in header and "SCOPES" not in header
    row = next(line for line in lines if line.startswith(f"{wordy.key.pk} "))
    assert "Nightly export" in row and "…" in row  # cut to fit, and said so
    assert "3 hours ago" in row  # 2 h 40 min, to the nearest hour
    assert "Old revoked key" not in listed.stdout and "Denied key" not in listed.stdout

    everything = run(manager_env, "keys", "list", "--all")
    assert "Old revoked key" in everything.stdout and "Denied key" in everything.stdout
    revoked_only = run(manager_env, "keys", "list", "--state", "revoked")
    assert [line.split()[0] for line in revoked_only.stdout.splitlines()[1:]] == [str(gone.key.pk)]
    wide = run(manager_env, "keys", "list", "--wide")
    assert "SCOPES" in wide.stdout.splitlines()[0]
    assert "Nightly export of every order to the warehouse (prod)" in wide.stdout


def test_keys_show_says_what_is_open_and_where_a_handed_over_key_went(manager_env):
    from apps.audit.services import Actor
    from apps.service_accounts.handover import key_hand_over
    from apps.service_accounts.services import service_account_create

    manager = ApiKey.objects.get(name="Manager")
    owner = manager.user
    person = _add_admin(manager.workspace, "leaving@example.com")
    theirs = make_key(user=person, name="Billing sync", scopes=["pages:read"])
    shown = run(manager_env, "keys", "show", str(theirs.key.pk))
    assert re.search(
        r"^Restrictions +all communities; all pages; all products; any network; "
        r"the default rate limit$",
        shown.stdout,
        re.M,
    ), shown.stdout
    assert "networks: -" not in shown.stdout
    assert "Handed over" not in shown.stdout and "Previous secret" not in shown.stdout

    account = service_account_create(
        workspace=manager.workspace, name="Billing bot", actor=Actor.of_user(owner)
    )
    new = key_hand_over(
        key=theirs.key, account=account, grace=timedelta(hours=1), actor=Actor.of_user(owner)
    ).key
    old = run(manager_env, "keys", "show", str(theirs.key.pk)).stdout
    handed = re.search(r"^Handed over to +(.+)$", old, re.M)
    assert handed, old
    assert "the service account Billing bot" in handed.group(1)
    assert f"key {new.pk} ({new.hint}) replaced it" in handed.group(1)
    assert re.search(r"works as that key until [A-Z][a-z]{2} \d{1,2}, 20\d\d", handed.group(1))
    grace = run(manager_env, "keys", "show", str(new.pk)).stdout
    assert re.search(r"^Previous secret works until +[A-Z][a-z]{2} \d", grace, re.M), grace
