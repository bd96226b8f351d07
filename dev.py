#!/usr/bin/env python3
"""Set up and run Gatehouse with nothing but Python 3.11+.

    python3 dev.py run     # venv, install, migrate, demo workspace and key, serve on :8000
    python3 dev.py run --port 8001   # the same on another port (`run 8001` says it too)
    python3 dev.py run --verbose     # and log each webhook delivery in the console too
    python3 dev.py test    # venv, install, the whole suite (PostgreSQL if DATABASE_URL says so)
    python3 dev.py fuzz    # schemathesis against the running API and its OpenAPI document
    python3 dev.py bench   # the authentication benchmark (needs wrk)

Extra arguments after `test` go to pytest, e.g. `python3 dev.py test -k patch -x`.
"""

import argparse
import errno
import hashlib
import os
import signal
import socket
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


def run_options(args: list[str]) -> argparse.Namespace:
    """`run`'s options: the port (`run --port 8001`, `run 8001`, or 8000; a bad one is a
    usage error) and --verbose."""
    parser = argparse.ArgumentParser(
        prog="python3 dev.py run",
        usage="python3 dev.py run [--port PORT] [--verbose]",
        description="Set up, fill the demo workspace and serve it with a task worker beside.",
        epilog="`python3 dev.py run 8001` is the same as `python3 dev.py run --port 8001`.",
    )
    parser.add_argument("positional_port", nargs="?", metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument(
        "--port", metavar="PORT", help="the port to serve on at 127.0.0.1 (default 8000)"
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="log each webhook delivery here too (/dev/webhooks/ always shows them)",
    )
    options = parser.parse_args(args)
    if options.port and options.positional_port and options.port != options.positional_port:
        parser.error(f"two ports given: {options.positional_port} and --port {options.port}")
    text = options.port or options.positional_port or "8000"
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        parser.error(f"the port must be a number from 1 to 65535, not {text!r}")
    options.port = int(text)
    return options


def port_refusal(port: int) -> str | None:
    """Why the development server could not listen on 127.0.0.1:`port`, or None when it can.
    Bound as runserver binds it (SO_REUSEADDR), so a port left in TIME_WAIT counts as free."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return f"Port {port} is already in use (another `python3 dev.py run`?)."
            return f"Port {port} cannot be used: {error.strerror}."
    return None


def a_free_port_after(port: int) -> int | None:
    return next((p for p in range(port + 1, min(port + 50, 65536)) if not port_refusal(p)), None)


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:`port` (a bare connection, which
    the development server neither answers nor logs)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def serve_together(server: list[str], worker: list[str], port: int, banner: str) -> int:
    """Run the server, then (once it listens, so that no delivery finds it missing) the task
    worker, as children of this process; print `banner` last; stop both when either ends or
    this process is told to stop (Ctrl-C, SIGTERM, SIGHUP): a worker is never left behind to
    be joined by a second one on the next run. Returns the exit code of the child that ended
    first (0 when this process was told to stop)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # their lines in order with this one's
    children = [subprocess.Popen(server, cwd=ROOT, env=env, preexec_fn=_die_with_parent)]

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), stop)
    code = 0
    try:
        while children[0].poll() is None and not listening(port):
            time.sleep(0.2)
        if children[0].poll() is None:
            children.append(
                subprocess.Popen(worker, cwd=ROOT, env=env, preexec_fn=_die_with_parent)
            )
            print(banner, flush=True)
        while all(child.poll() is None for child in children):
            time.sleep(0.3)
        code = next(child.returncode for child in children if child.returncode is not None)
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
    return code


def demo_banner(port: int, verbose: bool) -> str:
    """What `manage.py demo` prints (where to sign in, the demo key), kept to be printed
    last, below the server's and the worker's first lines, where a newcomer looks."""
    base_url = f"http://127.0.0.1:{port}"
    demo = subprocess.run(
        [str(PYTHON), "manage.py", "demo", "--base-url", base_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if demo.returncode != 0:
        sys.stdout.write(demo.stdout)
        sys.stderr.write(demo.stderr)
        sys.exit(demo.returncode)
    sys.stderr.write(demo.stderr)
    banner = demo.stdout.rstrip("\n")
    if not verbose:  # deliveries are not logged here then: /dev/webhooks/ shows each
        banner = banner.replace(
            ", whose log below shows each delivery",
            "; `python3 dev.py run --verbose` logs each delivery here too",
        )
    return f"{banner}\n\nServing {base_url}/ with a task worker beside it; Ctrl-C stops both."


def main() -> None:
    command, *rest = sys.argv[1:] or ["help"]
    if command == "run":
        options = run_options(rest)
        port = options.port
        # Before anything is set up or printed: a second server on a taken port would print a
        # demo key the running server does not know and send webhooks it cannot verify.
        if refusal := port_refusal(port):
            other = a_free_port_after(port)
            sys.exit(
                f"{refusal} Stop the server that holds it"
                + (f", or choose another port: python3 dev.py run --port {other}" if other else "")
            )
        ensure_environment("requirements.txt")
        # Links in e-mails, the demo's among them (written before the server starts).
        os.environ.setdefault("SITE_URL", f"http://127.0.0.1:{port}")
        # OAuth's issuer and the MCP resource follow the address each request came to, so an
        # MCP client connects at http://localhost:PORT/mcp as well as at 127.0.0.1.
        os.environ.setdefault("OAUTH_ISSUER", "")
        # Each webhook delivery is shown at /dev/webhooks/; logged here only with --verbose.
        os.environ.setdefault("LOG_WEBHOOK_DELIVERIES", "1" if options.verbose else "0")
        print("Migrating the SQLite database (db.sqlite3) ...", flush=True)
        sh(PYTHON, "manage.py", "migrate", "--noinput", "-v0")
        print("Preparing the demo workspace and a fresh demo key ...", flush=True)
        banner = demo_banner(port, options.verbose)
        if refusal := port_refusal(port):  # taken while the demo was prepared
            sys.exit(f"{refusal} It was free a moment ago; stop what took it and run again.")
        print("Starting the server, then the task worker ...", flush=True)
        # A task worker beside the server: webhook deliveries, e-mails of jobs, the schedule
        # (expiry notices hourly, usage and pruning daily). Its log shares this console.
        sys.exit(
            serve_together(
                [str(PYTHON), "manage.py", "runserver", f"127.0.0.1:{port}"],
                [
                    str(PYTHON),
                    "manage.py",
                    "worker",
                    "--",
                    "--no-startup-delay",
                    "--verbosity",
                    "0",
                ],
                port,
                banner,
            )
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
