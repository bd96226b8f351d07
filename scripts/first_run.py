"""How long `python3 dev.py run` takes to its first answer on a fresh clone with an empty pip
cache: what a newcomer waits. Prints the figure; run it by hand (CI leaves it out: it is a
figure, not a test, and costs minutes of the 45 CI has).

    python3 scripts/first_run.py

Clones this checkout into a temporary folder, points pip at an empty cache there, starts
`dev.py run` on a free port, and polls the sign-in page until it answers 200 (at most 10
minutes). Then it stops `dev.py` with SIGTERM (which stops its server and worker too) and
removes the folder. Not a test: a slow network makes it slow, and that is worth seeing.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT_SECONDS = 600


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback only
            return response.status == 200
    except OSError:
        return False


def main() -> int:
    folder = Path(tempfile.mkdtemp(prefix="gatehouse-first-run-"))
    try:
        clone = folder / "gatehouse"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        port = free_port()
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DATABASE_URL", "REDIS_URL", "VIRTUAL_ENV")
        }
        env["PIP_CACHE_DIR"] = str(folder / "pip-cache")  # empty: every package downloaded
        log = (folder / "run.log").open("w")
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "dev.py", "run", str(port)],
            cwd=clone,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            while time.monotonic() - started < LIMIT_SECONDS:
                if process.poll() is not None:
                    print((folder / "run.log").read_text()[-3000:])
                    print(f"first run: dev.py run exited with {process.returncode}")
                    return 1
                if answers(f"http://127.0.0.1:{port}/sign-in/"):
                    seconds = time.monotonic() - started
                    print(
                        f"first run: {seconds:.1f} s from `python3 dev.py run` on a fresh clone "
                        "with an empty pip cache to the first answer"
                    )
                    return 0
                time.sleep(0.5)
            print(f"first run: no answer within {LIMIT_SECONDS} s")
            return 1
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
