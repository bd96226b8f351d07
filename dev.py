#!/usr/bin/env python3
"""Set up and run Gatehouse with nothing but Python 3.11+.

    python3 dev.py run     # venv, install, migrate, demo workspace and key, serve on :8000
    python3 dev.py test    # venv, install, the whole suite (PostgreSQL if DATABASE_URL says so)
    python3 dev.py fuzz    # schemathesis against the running API and its OpenAPI document
    python3 dev.py bench   # the authentication benchmark (needs wrk)

Extra arguments after `test` go to pytest, e.g. `python3 dev.py test -k patch -x`.
"""

import hashlib
import os
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"


def sh(*args: str | Path, env: dict | None = None) -> None:
    result = subprocess.run([str(a) for a in args], cwd=ROOT, env=env)
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_environment(requirements: str) -> None:
    """Create .venv and install `requirements` when they changed since the last install."""
    if sys.version_info < (3, 11):  # noqa: UP036 - this file must run on any python3
        sys.exit("Gatehouse needs Python 3.11 or newer.")
    if not PYTHON.exists():
        print("Creating the virtual environment in .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = hashlib.sha256()
    cli_files = sorted((ROOT / "cli" / "gatehouse_cli").glob("*.py")) + [
        ROOT / "cli" / "gatehouse_cli" / "operations.json",
        ROOT / "cli" / "pyproject.toml",
    ]
    for path in [ROOT / "requirements.txt", ROOT / requirements, *cli_files]:
        wanted.update(path.read_bytes())
    stamp = VENV / f".installed-{requirements}"
    if stamp.exists() and stamp.read_text() == wanted.hexdigest():
        return
    print(f"Installing {requirements} (the first time takes about a minute) ...", flush=True)
    sh(PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", requirements)
    # The CLI is its own light package (cli/); installed here so `.venv/bin/gatehouse` works.
    sh(PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "./cli")
    stamp.write_text(wanted.hexdigest())


def _die_with_parent() -> None:
    """In the child, before exec: Linux sends it SIGTERM when dev.py dies, even by SIGKILL."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: Ctrl-C and SIGTERM still stop both, through the handler below


def serve_together(*commands: list[str]) -> None:
    """Run the server and the task worker as children of this process and stop both when
    either ends or this process is told to stop (Ctrl-C, SIGTERM, SIGHUP): a worker is
    never left behind to be joined by a second one on the next run."""
    children = [
        subprocess.Popen(command, cwd=ROOT, preexec_fn=_die_with_parent) for command in commands
    ]

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), stop)
    try:
        while all(child.poll() is None for child in children):
            time.sleep(0.3)
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()


def main() -> None:
    command, *rest = sys.argv[1:] or ["help"]
    if command == "run":
        port = rest[0] if rest else "8000"
        ensure_environment("requirements.txt")
        print("Migrating the SQLite database (db.sqlite3) ...", flush=True)
        sh(PYTHON, "manage.py", "migrate", "--noinput", "-v0")
        print("Preparing the demo workspace and a fresh demo key ...", flush=True)
        sh(PYTHON, "manage.py", "demo", "--base-url", f"http://127.0.0.1:{port}")
        # A task worker beside the server: webhook deliveries, e-mails of jobs, the schedule
        # (expiry notices hourly, usage and pruning daily). Its log shares this console.
        os.environ.setdefault("SITE_URL", f"http://127.0.0.1:{port}")  # links in e-mails
        # OAuth's issuer and the MCP resource follow the address each request came to, so an
        # MCP client connects at http://localhost:PORT/mcp as well as at 127.0.0.1.
        os.environ.setdefault("OAUTH_ISSUER", "")
        worker = ["worker", "--", "--no-startup-delay", "--verbosity", "0"]  # deliveries logged
        serve_together(
            [str(PYTHON), "manage.py", "runserver", f"127.0.0.1:{port}"],
            [str(PYTHON), "manage.py", *worker],
        )
    elif command == "test":
        ensure_environment("requirements-dev.txt")
        # The whole suite runs on two workers (pytest-xdist): about half the wall time on two
        # cores. With arguments, pytest gets exactly those (add -n 2 yourself if you like).
        workers = [] if rest else ["-n", "2"]
        os.execv(PYTHON, [str(PYTHON), "-m", "pytest", *workers, *rest])
    elif command == "fuzz":
        ensure_environment("requirements-dev.txt")
        os.execv(PYTHON, [str(PYTHON), "scripts/fuzz_api.py", *rest])
    elif command == "bench":
        ensure_environment("requirements-dev.txt")
        os.execv(PYTHON, [str(PYTHON), "bench/auth_overhead.py", *rest])
    else:
        print(__doc__)
        sys.exit(0 if command in {"help", "-h", "--help"} else 2)


if __name__ == "__main__":
    main()
