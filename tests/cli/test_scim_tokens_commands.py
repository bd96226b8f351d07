"""`gatehouse scim-tokens create|list|revoke`, as a subprocess against a live server: the
secret printed once, then usable at /scim/v2/ until revoked."""

import json

import pytest
import requests

from apps.api.scopes import EVERY_SCOPE
from tests.factories import make_key, owner_of

from .test_cli import env, run  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_list_and_revoke_a_scim_token(env, live_server):  # noqa: F811
    owner = owner_of(email="owner@example.com")
    env.update(
        GATEHOUSE_API_KEY=make_key(user=owner, scopes=EVERY_SCOPE).secret,
        GATEHOUSE_URL=live_server.url,
    )
    made = run(env, "--json", "scim-tokens", "create", "--name", "Okta")
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    secret = created["secret"]
    assert secret.startswith("gst_")
    scim = f"{live_server.url}/scim/v2/Users"
    bearer = {"Authorization": f"Bearer {secret}"}
    assert requests.get(scim, headers=bearer, timeout=10).status_code == 200

    listed = run(env, "scim-tokens", "list")
    assert listed.returncode == 0 and "Okta" in listed.stdout and secret not in listed.stdout

    gone = run(env, "scim-tokens", "revoke", str(created["token"]["id"]))
    assert gone.returncode == 0, gone.stderr
    assert requests.get(scim, headers=bearer, timeout=10).status_code == 401
