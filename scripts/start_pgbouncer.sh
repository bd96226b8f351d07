#!/usr/bin/env bash
# PgBouncer (Debian's package) in transaction pooling in front of the local PostgreSQL, on
# 127.0.0.1:6439 (beside any PgBouncer the package itself started on 6432), for the suite's
# third run (.ci/run). Every database name is passed through, so the test databases pytest
# creates are reached the same way. Idempotent: a running one of ours is restarted.
# PGBOUNCER_PORT and PGBOUNCER_DIR choose another port and folder (the fault run's own).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PGBOUNCER_PORT:-6439}"
DIR="${PGBOUNCER_DIR:-$PWD/var/pgbouncer}"
mkdir -p "$DIR"
chown postgres "$DIR" 2>/dev/null || true
if [ -f "$DIR/pgbouncer.pid" ]; then
  kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$PORT" || break; sleep 0.2; done
fi
cat >"$DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
pool_mode = transaction
default_pool_size = 10
max_client_conn = 500
server_reset_query =
; Check a server connection before handing it out again, so that one PostgreSQL terminated
; (a restart, a failover) is replaced rather than failing the next transaction.
server_check_delay = 0
; After a failed login to PostgreSQL (a restart), try again in 1 s rather than the default 15,
; during which every client waits; and a client waits for a server 10 s at most (default 120),
; then gets an error the app answers 503 with Retry-After.
server_login_retry = 1
query_wait_timeout = 10
ignore_startup_parameters = extra_float_digits,options
logfile = $DIR/pgbouncer.log
pidfile = $DIR/pgbouncer.pid
INI
echo '"postgres" ""' >"$DIR/userlist.txt"
chown postgres "$DIR"/* 2>/dev/null || true
# PgBouncer refuses to run as root: as postgres when started by root.
if [ "$(id -u)" = 0 ]; then
  su postgres -s /bin/sh -c "/usr/sbin/pgbouncer -d '$DIR/pgbouncer.ini'"
else
  /usr/sbin/pgbouncer -d "$DIR/pgbouncer.ini"
fi
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$PORT" && break; sleep 0.2; done
pg_isready -h 127.0.0.1 -p "$PORT"
