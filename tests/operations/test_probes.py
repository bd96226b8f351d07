"""/livez and /readyz: each check of /readyz turned red for real."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.jobs.models import WorkerHeartbeat
from apps.operations import probes

from .live import get, gunicorn, manage, server_env


def checks(response) -> dict:
    body = response.content.decode() if hasattr(response, "content") else response
    lines = body.splitlines()
    parsed = json.loads(body)
    assert len(lines) == len(parsed["checks"]) + 2  # one line per check
    return {check["check"]: check for check in parsed["checks"]}


@pytest.fixture
def worker_beats(db):
    WorkerHeartbeat.objects.create(worker_id="w1", seen_at=timezone.now())


def test_livez_answers_without_asking_anything(client):
    response = client.get("/livez")
    assert response.status_code == 200 and checks(response)["process"]["ok"] is True


def test_readyz_is_ready_with_a_migrated_database_and_a_live_worker(client, worker_beats):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert set(checks(response)) == {"database", "migrations", "queue"}  # no Redis configured


@pytest.mark.django_db
def test_readyz_says_but_does_not_fail_when_no_worker_served_the_queue_for_two_minutes(client):
    # §15: a stopped worker is an alert, not every app server out of the load balancer.
    WorkerHeartbeat.objects.create(worker_id="w1", seen_at=timezone.now() - timedelta(minutes=3))
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["status"] == "ok"
    found = checks(response)
    assert found["queue"]["ok"] is False and found["queue"]["critical"] is False
    assert found["database"]["ok"] is True and found["database"]["critical"] is True


@pytest.mark.django_db
def test_a_recently_finished_task_is_a_served_queue(client):
    from django_tasks_db.models import DBTaskResult

    from apps.webhooks.delivery import deliver_one

    deliver_one.enqueue("msg_none")
    DBTaskResult.objects.update(status="SUCCESSFUL", finished_at=timezone.now())
    assert checks(client.get("/readyz"))["queue"]["ok"] is True


def test_readyz_fails_when_redis_stops(client, worker_beats, with_redis):
    _start, stop = with_redis
    response = client.get("/readyz")
    assert response.status_code == 200 and checks(response)["redis"]["ok"] is True
    stop()
    response = client.get("/readyz")
    assert response.status_code == 503 and checks(response)["redis"]["ok"] is False


def test_readyz_fails_on_an_unmigrated_then_an_unreachable_database(tmp_path):
    probes._migrated = False
    env = server_env(tmp_path)
    with gunicorn(env, tmp_path / "server.log") as (base, _master):
        status, body = get(f"{base}/readyz")
        assert status == 503
        found = checks(body.decode())
        assert found["database"]["ok"] is True and found["migrations"]["ok"] is False
        assert "not applied" in found["migrations"]["detail"]
        assert get(f"{base}/livez")[0] == 200
    manage(env, "migrate", "--noinput")
    with gunicorn(env, tmp_path / "server.log") as (base, _master):
        found = checks(get(f"{base}/readyz")[1].decode())
        assert found["migrations"]["ok"] is True
    unreachable = server_env(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:9/none")
    with gunicorn(unreachable, tmp_path / "server.log") as (base, _master):
        status, body = get(f"{base}/readyz")
        found = checks(body.decode())
        assert status == 503 and found["database"]["ok"] is False
        assert found["queue"]["detail"] == "database unreachable"
