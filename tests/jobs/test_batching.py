"""The batching worker of `manage.py worker` (apps/jobs/batching.py): several tasks claimed in
one transaction, their results written with the next claim, each task's `after_task` writes in
the transaction of its result; every task still runs once, a failure stays the task's own, and
what a worker did not start goes back to the queue."""

import pytest
from django.contrib.auth.models import Permission
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from apps.jobs.models import ScheduledJob
from apps.jobs.task_writes import after_task
from tests.conftest import batching_worker, run_batched

pytestmark = pytest.mark.django_db(transaction=True)


@task()
def note(name: str, fail: str = "") -> str:
    """Write a ScheduledJob row named `name` with the task's result; `fail` says how to fail."""
    if fail == "raise":
        raise ValueError(f"{name} went wrong")
    if fail == "duplicate":  # a write that fails at once (a primary key taken)
        after_task(lambda: ScheduledJob.objects.create(name="taken", next_run_at=timezone.now()))
    if fail == "at-commit":  # a write that fails only at COMMIT (a deferred foreign key)
        after_task(lambda: Permission.objects.create(name=name, codename=name, content_type_id=0))
    after_task(lambda: ScheduledJob.objects.create(name=name, next_run_at=timezone.now()))
    return name


def results() -> dict[str, tuple[str, list[str]]]:
    return {
        row.args_kwargs["args"][0]: (row.status, row.worker_ids)
        for row in DBTaskResult.objects.filter(task_path=note.module_path)
    }


def test_after_task_outside_the_batching_worker_writes_at_once():
    after_task(lambda: ScheduledJob.objects.create(name="now", next_run_at=timezone.now()))
    assert ScheduledJob.objects.filter(name="now").exists()


def test_a_batch_of_tasks_is_claimed_and_written_in_a_few_transactions():
    with transaction.atomic():
        for n in range(20):
            note.enqueue(f"job-{n}")
    with CaptureQueriesContext(connection) as queries:
        assert run_batched("w1") == 20
    claims = [q for q in queries.captured_queries if "django_tasks_database" in q["sql"]]
    claims = [q for q in claims if q["sql"].startswith("SELECT") and "LIMIT" in q["sql"]]
    assert len(claims) <= 4  # 5 at first, then more as tasks prove quick, then the empty one
    assert results() == {f"job-{n}": ("SUCCESSFUL", ["w1"]) for n in range(20)}
    assert ScheduledJob.objects.count() == 20
    assert set(DBTaskResult.objects.values_list("return_value", flat=True)) == {
        f"job-{n}" for n in range(20)
    }


def test_a_task_that_raises_fails_alone_and_its_writes_are_kept():
    note.enqueue("before")
    note.enqueue("broken", fail="raise")
    note.enqueue("after")
    run_batched()
    assert {name: status for name, (status, _) in results().items()} == {
        "before": "SUCCESSFUL",
        "broken": "FAILED",
        "after": "SUCCESSFUL",
    }
    failed = DBTaskResult.objects.get(status="FAILED")
    assert failed.exception_class_path == "builtins.ValueError"
    assert "broken went wrong" in failed.traceback


@pytest.mark.parametrize("fail", ["duplicate", "at-commit"])
def test_a_task_whose_writes_fail_is_failed_and_the_others_are_written(fail):
    ScheduledJob.objects.create(name="taken", next_run_at=timezone.now())
    note.enqueue("first")
    note.enqueue("bad", fail=fail)
    note.enqueue("last")
    run_batched()
    statuses = {name: status for name, (status, _) in results().items()}
    assert statuses == {"first": "SUCCESSFUL", "bad": "FAILED", "last": "SUCCESSFUL"}
    assert "IntegrityError" in DBTaskResult.objects.get(status="FAILED").exception_class_path
    # none of the failed task's writes, all of the others'
    assert set(ScheduledJob.objects.values_list("name", flat=True)) == {"taken", "first", "last"}
    assert not Permission.objects.filter(codename="bad").exists()


def test_a_worker_told_to_stop_writes_what_it_ran_and_gives_back_the_rest():
    worker = batching_worker("w1")
    for n in range(5):
        note.enqueue(f"job-{n}")
    assert len(worker.write_and_claim(5)) == 5
    worker.run_task(worker.claimed.pop(0))
    worker.running = False  # SIGTERM after the first task
    worker.run_batch()
    assert worker.write_and_claim(worker.claim_size()) == []
    assert results() == {
        "job-0": ("SUCCESSFUL", ["w1"]),
        **{f"job-{n}": ("READY", []) for n in range(1, 5)},  # not attempted: no worker id kept
    }
    assert run_batched("w2") == 4
    assert results()["job-4"] == ("SUCCESSFUL", ["w2"])


def test_a_result_is_not_written_over_a_task_taken_back_meanwhile():
    worker = batching_worker("w1")
    note.enqueue("slow")
    worker.write_and_claim(1)
    worker.run_batch()
    # The lease ran out (the worker seemed dead): the task was queued again and taken by w2.
    DBTaskResult.objects.update(worker_ids=["w1", "w2"])
    worker.write_and_claim(0)
    assert results() == {"slow": ("RUNNING", ["w1", "w2"])}  # w2 writes its own result
    assert not ScheduledJob.objects.exists()  # nor did w1's writes land


def test_tasks_claimed_by_a_commit_whose_answer_was_lost_go_back_to_the_queue():
    worker = batching_worker("w1")
    for n in range(3):
        note.enqueue(f"job-{n}")
    with transaction.atomic():  # committed, but the worker never heard back
        worker.claim(list(DBTaskResult.objects.all()))
    worker.unsure = True
    worker.write_and_claim(0)
    assert {status for status, _ in results().values()} == {"READY"}
    assert run_batched("w1") == 3


def test_a_batch_holds_no_more_than_its_tasks_take_half_a_second():
    worker = batching_worker("w1")
    worker.task_seconds = 0.2  # slow tasks: two at a time
    assert worker.claim_size() == 2
    worker.task_seconds = 0.001
    assert worker.claim_size() == 50
    worker.max_tasks, worker._run_tasks = 10, 7
    assert worker.claim_size() == 3
