"""Row 4 of the fault run: PostgreSQL connections per app worker process, directly and through
PgBouncer."""

import argparse
import collections
import time
from dataclasses import dataclass

from faults.base import (
    DATABASE,
    POSTGRES_PORT,
    SERVERS,
    WORKERS_PER_SERVER,
    Ports,
    Row,
    say,
)
from faults.processes import Load, query, socket_inodes, tcp_table
from faults.setup import Setup


def connections_under_load(
    setup: Setup, pgbouncer: bool, seconds: float = 8
) -> dict[int, list[int]]:
    """How many database connections each app worker process holds, sampled every 0.2 s
    during `seconds` of load and 6 s after it (so a usage flush is included): pid → counts.
    Direct, they are pg_stat_activity's client ports mapped to the processes owning them;
    through PgBouncer, the processes' established sockets to it (its admin console's SHOW
    CLIENTS is closed: start_pgbouncer.sh sets no admin_users)."""
    stack = setup.stack
    stack.serve(pgbouncer=pgbouncer)
    secret = setup.key(f"row4-{'pgbouncer' if pgbouncer else 'direct'}")
    samples: dict[int, list[int]] = collections.defaultdict(list)
    load = Load(stack.ports, secret, threads=8)
    ends = time.monotonic() + seconds
    while time.monotonic() < ends + 6:
        if time.monotonic() > ends:
            load.stopping.set()
        apps = stack.app_processes()
        owners = {inode: pid for pid in apps for inode in socket_inodes(pid)}
        if pgbouncer:
            target, ports = Ports.pgbouncer, None
        else:
            target = POSTGRES_PORT
            ports = {
                port
                for (port,) in query(
                    "SELECT client_port FROM pg_stat_activity "
                    "WHERE datname = %s AND client_port IS NOT NULL",
                    (DATABASE,),
                    database="postgres",
                )
            }
        held: collections.Counter = collections.Counter()
        for inode, (local, remote, state) in tcp_table().items():
            if inode in owners and remote == target and state == "01":
                if ports is None or local in ports:
                    held[owners[inode]] += 1
        for pid in apps:
            samples[pid].append(held.get(pid, 0))
        time.sleep(0.2)
    load.stop()
    return dict(samples)


@dataclass
class Held:
    processes: int
    usual: int  # the most any process held in most of its samples
    most: int  # the most any process held at one instant
    over_one: int  # samples of a process holding more than one
    samples: int

    @classmethod
    def of(cls, samples: dict[int, list[int]]) -> "Held":
        counts = [c for per_pid in samples.values() for c in per_pid]
        usual = max(
            (collections.Counter(per_pid).most_common(1)[0][0] for per_pid in samples.values()),
            default=0,
        )
        return cls(
            len(samples), usual, max(counts, default=0), sum(c > 1 for c in counts), len(counts)
        )

    def text(self, what: str) -> str:
        extra = (
            f"; {self.most} at one instant in {self.over_one} of {self.samples} samples"
            if self.most > 1
            else f"; never more in {self.samples} samples"
        )
        return f"{self.usual} {what} per app process held ({self.processes} processes{extra})"


def row_connections(setup: Setup) -> Row:
    """Row 4: database connections per app worker process, directly and through PgBouncer."""
    direct = Held.of(connections_under_load(setup, pgbouncer=False))
    say(f"row 4: direct: {direct}")
    pooled = Held.of(connections_under_load(setup, pgbouncer=True))
    servers = query(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (DATABASE,), database="postgres"
    )[0][0]
    say(f"row 4: through PgBouncer: {pooled}; {servers} server connections")
    # A second connection for a moment is the usage flush's own (docs/operations.md): it
    # opens one for each write and closes it. Held means seen in most samples.
    passed = direct.usual == pooled.usual == 1 and all(
        held.over_one <= held.samples // 20 for held in (direct, pooled)
    )
    return Row(
        "4",
        f"{SERVERS} app servers × {WORKERS_PER_SERVER} workers under load, sampled every 0.2 s",
        f"direct: {direct.text('PostgreSQL connection')}; through PgBouncer: "
        f"{pooled.text('client connection')}, {servers} server connections",
        "1 (a second only for a usage flush's moment)",
        "pass" if passed else "FAIL",
    )


NUMBER = 4


def run(setup: Setup, options: argparse.Namespace) -> list[Row]:
    """The row's figures, one Row each."""
    return [row_connections(setup)]
