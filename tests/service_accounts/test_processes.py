"""Deleting a service account kills its keys in every app process at once (docs/product.md
§12): two gunicorn workers answer its keys, the account is deleted, and from the next request
on neither worker accepts them."""

import sys
import time
from pathlib import Path

import pytest
import requests

from apps.audit.services import Actor
from apps.service_accounts.services import service_account_create, service_account_key_create
from tests.common.test_idle_connections import _free_port
from tests.factories import make_key, owner_of
from tests.jobs.test_workers import _database_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_deleting_it_stops_its_keys_in_every_worker_at_once(tmp_path):
    import subprocess

    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    manager = make_key(user=owner, scopes=["keys:read", "keys:write"])
    account = service_account_create(workspace=workspace, name="CI", actor=Actor.of_user(owner))
    secrets = [
        service_account_key_create(
            account=account,
            name=f"k{n}",
            scopes=["pages:read"],
            expires_at=None,
            actor=Actor.of_user(owner),
        ).secret
        for n in range(2)
    ]
    port = _free_port()
    env = {**_database_env(), "DEBUG": "true", "HOME": str(tmp_path)}
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    command = [gunicorn, "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2"]
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    session = requests.Session()

    def status(secret: str) -> int:
        headers = {"Authorization": f"Bearer {secret}", "Connection": "close"}
        return session.get(f"{base}/workspace", headers=headers, timeout=15).status_code

    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if status(secrets[0]) == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.2)
        before = [status(secret) for secret in secrets for _ in range(20)]
        assert before == [200] * 40
        gone = session.delete(
            f"{base}/service-accounts/{account.pk}",
            headers={"Authorization": f"Bearer {manager.secret}"},
            timeout=15,
        )
        assert gone.status_code == 204
        after = [status(secret) for secret in secrets for _ in range(20)]
        assert after == [401] * 40
    finally:
        server.terminate()
        server.wait(30)
