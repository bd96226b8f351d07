"""Two gunicorn masters started from this repository's gunicorn.conf.py on one host: each has a
control socket of its own, so stopping one leaves the other's in place (issue 42, item 6)."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _control_sockets(home: Path) -> set[str]:
    folder = home / ".gunicorn"
    return {p.name for p in folder.iterdir() if p.is_socket()} if folder.exists() else set()


def test_stopping_one_master_leaves_the_other_its_control_socket(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"},
        "HOME": str(tmp_path),  # gunicorn's default place: ~/.gunicorn/gunicorn.ctl
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        "DEBUG": "true",
    }
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    masters = [
        subprocess.Popen(
            [gunicorn, "config.wsgi", "-b", f"127.0.0.1:{_free_port()}", "--workers", "1"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 60
        while len(_control_sockets(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        both = _control_sockets(tmp_path)
        assert len(both) == 2, both  # one each, not one shared
        masters[0].send_signal(signal.SIGTERM)
        masters[0].wait(30)
        left = _control_sockets(tmp_path)
        assert len(left) == 1 and left < both  # the running master's is still there
        assert masters[1].poll() is None
    finally:
        for master in masters:
            if master.poll() is None:
                master.send_signal(signal.SIGTERM)
                master.wait(30)
    assert _control_sockets(tmp_path) == set()  # each removed its own when it stopped


@pytest.mark.parametrize("flag", ["--no-control-socket"])
def test_a_master_told_to_make_no_control_socket_makes_none(tmp_path, flag):
    env = {
        **{k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"},
        "HOME": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        "DEBUG": "true",
    }
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    port = _free_port()
    master = subprocess.Popen(
        [gunicorn, "config.wsgi", "-b", f"127.0.0.1:{port}", "--workers", "1", flag],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        time.sleep(1)
        assert _control_sockets(tmp_path) == set()
    finally:
        master.send_signal(signal.SIGTERM)
        master.wait(30)
