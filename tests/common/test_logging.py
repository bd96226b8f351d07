"""A key sent in a URL never reaches a log line: the development server's nor gunicorn's. And
what gunicorn answers by itself is JSON like the rest."""

import json
import os
import re
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
    """The server's whole log once it has answered the call and written its access line.
    Deadlines rather than counts of naps: on a busy machine the server may take half a minute
    to start and a moment to write the line after the answer."""
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite:///{tmp_path}/log.sqlite3",
        DEBUG="true",
        PYTHONUNBUFFERED="1",  # every line in the file as it is written, none lost at the end
    )
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/api/v1/workspace?access_token={SECRET}"
            deadline = time.monotonic() + 90
            while True:
                try:
                    urllib.request.urlopen(url, timeout=10)
                except urllib.error.HTTPError as answer:
                    assert answer.code == 400
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        pytest.fail(f"the server did not answer: {log.read_text()}")
                    time.sleep(0.1)
            deadline = time.monotonic() + 30
            while "GET /api/v1/workspace" not in log.read_text():  # the access line
                if time.monotonic() > deadline:
                    pytest.fail(f"no access line within 30 s of the answer: {log.read_text()}")
                time.sleep(0.1)
        finally:
            server.terminate()
            server.wait(30)  # a loaded machine: gunicorn's graceful stop took over 10 s once
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
    assert re.search(r'"GET /api/v1/workspace HTTP/1.1" 400 .* req_[0-9a-f]{24}$', text, re.M)


@pytest.mark.parametrize(
    ("request_bytes", "status", "error"),
    [
        (b"GET /api/v1/keys?cursor=" + b"x" * 9000 + b" HTTP/1.1\r\n", 414, "uri-too-long"),
        (b"GET /api/v1/keys HTTP/1.1\r\nX-Big: " + b"y" * 9000 + b"\r\n", 431, "headers-too-large"),
        (b"NOT HTTP AT ALL\r\n", 400, "bad-request"),
        (b"GET / HTTP/1.1\r\nExpect: 200-ok\r\n", 417, "expectation-failed"),
    ],
)
def test_what_gunicorn_refuses_itself_is_answered_in_the_apis_json(
    tmp_path, request_bytes, status, error
):
    port = _free_port()
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    command = [gunicorn, "config.wsgi", "-b", f"127.0.0.1:{port}"]
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", DEBUG="true")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    try:
        # Up to a minute: under a loaded CI machine gunicorn took over 10 s to listen.
        deadline = time.monotonic() + 60
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("the server did not start")
                time.sleep(0.1)
        with connection:
            # The worker may still be importing the app when the master accepts: wait for the
            # answer as long as a loaded machine needs (5 s timed out in a full run).
            connection.settimeout(60)
            connection.sendall(request_bytes + b"Host: x\r\n\r\n")
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
    finally:
        server.terminate()
        server.wait(30)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode())
    assert b"\r\nContent-Type: application/json\r\n" in head
    assert re.search(rb"\r\nRequest-Id: req_[0-9a-f]{24}(\r\n|$)", head)
    assert json.loads(body)["error"] == error and json.loads(body)["message"]
