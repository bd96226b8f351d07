"""The PgBouncer that ships (deploy/pgbouncer.ini) and the one CI and the fault run start
(scripts/start_pgbouncer.sh) bound their waits alike, as the fault run measured them (rows 11
and 13): a restarted PostgreSQL is tried again after 1 s, not PgBouncer's default 15 s of
silence for every client, and a client waits for a server at most 10 s, no longer than the
app's own bound on an answer, so that the app, not the client's timeout, answers 503."""

import re
from pathlib import Path

from config.database_settings import database_settings

ROOT = Path(__file__).resolve().parents[2]
BOUNDS = {"server_check_delay": "0", "server_login_retry": "1", "query_wait_timeout": "10"}


def settings_of(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+)\s*=\s*(\S*)\s*$", text, flags=re.M))


def test_the_shipped_and_the_tested_pgbouncer_bound_their_waits_alike():
    shipped = settings_of((ROOT / "deploy" / "pgbouncer.ini").read_text())
    tested = settings_of((ROOT / "scripts" / "start_pgbouncer.sh").read_text())
    for name, value in BOUNDS.items():
        assert shipped.get(name) == value, f"deploy/pgbouncer.ini: {name} = {shipped.get(name)}"
        assert tested.get(name) == value, f"start_pgbouncer.sh: {name} = {tested.get(name)}"


def test_pgbouncer_gives_up_no_later_than_the_app_does(monkeypatch):
    for name in ("DATABASE_ANSWER_TIMEOUT_SECONDS", "DATABASE_CONNECT_TIMEOUT_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    options = database_settings("postgres://gatehouse@db/gatehouse", ROOT)["OPTIONS"]
    assert int(BOUNDS["query_wait_timeout"]) <= options["answer_timeout"]
    assert options["connect_timeout"] < options["answer_timeout"]
