import json
import threading

import pytest
from django.db import connections

from apps.workspaces.models import Workspace
from tests.client import Client
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_key, owner_of


@pytest.mark.django_db(transaction=True)
def test_concurrent_patches_of_different_fields_both_survive():
    workspace = WorkspaceFactory(timezone="UTC", transcription_language="en")
    secret = make_key(user=owner_of(workspace), workspace=workspace).secret
    failures: list[str] = []

    for round_number in range(10):
        timezone_name = ["Asia/Tokyo", "Europe/Paris"][round_number % 2]
        language = ["de", "fr"][round_number % 2]
        start = threading.Barrier(2)

        def send(body: dict, start: threading.Barrier = start) -> None:
            try:
                start.wait()
                response = Client().patch(
                    "/api/v1/workspace",
                    json.dumps(body),
                    content_type="application/json",
                    **auth(secret),
                )
                if response.status_code != 200:
                    failures.append(response.content.decode())
            finally:
                connections.close_all()

        threads = [
            threading.Thread(target=send, args=({"timezone": timezone_name},)),
            threading.Thread(target=send, args=({"transcriptionLanguage": language},)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        fresh = Workspace.objects.get(pk=workspace.pk)
        assert (fresh.timezone, fresh.transcription_language) == (timezone_name, language)
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_patches_all_succeed_and_the_last_write_is_whole():
    """On SQLite as on PostgreSQL: no 500 'database is locked', every PATCH applied whole."""
    workspace = WorkspaceFactory(name="Start")
    secret = make_key(user=owner_of(workspace), workspace=workspace).secret
    start = threading.Barrier(20)
    statuses: list[int] = []
    names = [f"Name {n}" for n in range(20)]

    def send(name: str) -> None:
        try:
            start.wait()
            response = Client().patch(
                "/api/v1/workspace",
                json.dumps({"workspaceName": name, "timezone": "Europe/Berlin"}),
                content_type="application/json",
                **auth(secret),
            )
            statuses.append(response.status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 20
    fresh = Workspace.objects.get(pk=workspace.pk)
    assert fresh.name in names and fresh.timezone == "Europe/Berlin"
