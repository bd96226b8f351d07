"""`python3 dev.py run` as a newcomer types it, run as a subprocess: its port is said in --help
and taken as `--port N` or `N`, and a port already taken is said at once, before anything is
migrated or printed, with a non-zero exit."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _dev(*args: str, tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite:///{tmp_path}/dev.sqlite3",
        DEMO_KEY_FILE=str(tmp_path / "demo-key"),
    )
    return subprocess.run(
        [sys.executable, "dev.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def taken_port():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize("form", ["--port", "positional"])
def test_a_taken_port_is_said_before_anything_is_set_up(tmp_path, taken_port, form):
    args = ["--port", str(taken_port)] if form == "--port" else [str(taken_port)]
    finished = _dev("run", *args, tmp_path=tmp_path)
    said = finished.stdout + finished.stderr
    assert finished.returncode != 0, said
    assert f"Port {taken_port} is already in use" in finished.stderr
    assert "python3 dev.py run --port " in finished.stderr  # and which one to use instead
    assert finished.stdout == ""  # nothing migrated, no demo key printed
    assert not (tmp_path / "dev.sqlite3").exists() and not (tmp_path / "demo-key").exists()
    assert "Traceback" not in said


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--port", "eighty"], "the port must be a number from 1 to 65535, not 'eighty'"),
        (["--port", "70000"], "the port must be a number from 1 to 65535, not '70000'"),
        (["--port"], "argument --port: expected one argument"),
        (["8001", "--port", "8002"], "two ports given: 8001 and --port 8002"),
        (["--verbose"], "unrecognized arguments: --verbose"),
    ],
)
def test_a_bad_port_is_a_usage_error_not_a_traceback(tmp_path, args, said):
    finished = _dev("run", *args, tmp_path=tmp_path, timeout=60)
    assert finished.returncode == 2
    assert said in finished.stderr and "Traceback" not in finished.stderr
    assert "usage: python3 dev.py run [--port PORT]" in finished.stderr
    assert finished.stdout == "" and not (tmp_path / "dev.sqlite3").exists()


def test_help_says_the_port_and_how_to_choose_it(tmp_path):
    top = _dev("--help", tmp_path=tmp_path, timeout=60)
    assert top.returncode == 0
    assert "python3 dev.py run --port 8001" in top.stdout and ":8000" in top.stdout
    run = _dev("run", "--help", tmp_path=tmp_path, timeout=60)
    assert run.returncode == 0
    assert "--port PORT" in run.stdout and "(default 8000)" in run.stdout
    assert not (tmp_path / "dev.sqlite3").exists()
