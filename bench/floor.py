"""Gatehouse beside the framework-free floor (`../shared/bench/floor/`), in one run.

    .venv/bin/python bench/floor.py [--rounds 5]      # needs ../shared/bench and PostgreSQL

Serves Gatehouse as bench/peers.py does (gunicorn, 2 sync workers, DEBUG off, PostgreSQL over
the local socket with persistent connections, the limiter on and usage counted), mints a key,
and runs the floor's own script: a bare WSGI function doing the same lookup and answer on the
same database and key, served by the same gunicorn settings, measured in interleaved rounds.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = ROOT.parent / "shared" / "bench" / "floor" / "run.sh"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))
from local_server import BIN, gunicorn  # noqa: E402
from peers import fresh_bench_database  # noqa: E402

DATABASE = "gatehouse_floor"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not FLOOR.exists():
        print(f"No floor at {FLOOR}")
        return 2
    env, secret = fresh_bench_database("floor", DATABASE)
    with gunicorn(env, workers=2) as (base, _server):
        floor_env = dict(
            os.environ,
            FLOOR_DSN=f"host=/var/run/postgresql user=postgres dbname={DATABASE}",
            API_KEY_HASH_SECRET=env["API_KEY_HASH_SECRET"],
            KEY=secret,
            GATEHOUSE_URL=f"{base}/api/v1/workspace",
            GUNICORN=str(BIN / "gunicorn"),
            ROUNDS=str(args.rounds),
        )
        return subprocess.run(["bash", str(FLOOR)], env=floor_env).returncode


if __name__ == "__main__":
    sys.exit(main())
