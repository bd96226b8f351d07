"""A key sent in a URL never reaches a log line: the development server's nor gunicorn's."""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECRET = "gwk_" + "Q" * 32 + "000000"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve_and_call(command: list[str], port: int, tmp_path: Path) -> str:
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path}/log.sqlite3", DEBUG="true")
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/api/v1/workspace?access_token={SECRET}"
            for _ in range(100):
                try:
                    urllib.request.urlopen(url, timeout=2)
                except urllib.error.HTTPError as answer:
                    assert answer.code == 400
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                pytest.fail(f"the server did not answer: {log.read_text()}")
            time.sleep(0.3)  # let the access line be written
        finally:
            server.terminate()
            server.wait(10)
    return log.read_text()


def test_the_development_server_log_has_no_key_from_the_url(tmp_path):
    port = _free_port()
    command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    text = _serve_and_call(command, port, tmp_path)
    assert "/api/v1/workspace?access_token=[removed]" in text
    assert SECRET not in text


def test_the_gunicorn_access_log_has_no_query_string(tmp_path):
    port = _free_port()
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    command = [gunicorn, "config.wsgi", "-b", f"127.0.0.1:{port}", "--access-logfile", "-"]
    text = _serve_and_call(command, port, tmp_path)
    assert '"GET /api/v1/workspace HTTP/1.1" 400' in text
    assert SECRET not in text and "access_token" not in text
