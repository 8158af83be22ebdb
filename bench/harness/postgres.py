"""The benchmark's PostgreSQL: one private cluster for the whole run, pinned to the servers' CPU.

Started on first use (initdb and pg_ctl in a temporary folder, on a free port of 127.0.0.1,
as the tests start theirs: tests/helpers/postgres.py) and removed when the run ends. The
PostgreSQL servers of the benchmark (svc-pg, node-pg) share one database, `bench`, whose
users table each of them seeds with the same 1,000 rows.
"""

import atexit
import sys

from harness.servers import ROOT, SERVER_CPU, WORK

_cluster = None


def database_url() -> str:
    global _cluster
    if _cluster is None:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        from tests.helpers.postgres import start_cluster

        _cluster = start_cluster(prefix=("taskset", "-c", SERVER_CPU))
        atexit.register(_cluster.remove)
        _cluster.sql("CREATE DATABASE bench")
    return _cluster.url("bench")


def fresh_database(name: str) -> str:
    """A new, empty database of the benchmark's cluster (dropped first if a run left it)."""
    database_url()
    _cluster.sql(f"DROP DATABASE IF EXISTS {name}")
    _cluster.sql(f"CREATE DATABASE {name}")
    return _cluster.url(name)


def fresh_url(kind: str, name: str) -> str:
    """A new, empty database called `name` on `kind` ("postgresql": of the run's cluster;
    "sqlite": a file in bench/.work, its leftovers removed): its URL or path."""
    if kind == "postgresql":
        return fresh_database(name)
    path = WORK / f"{name}.sqlite"
    for leftover in WORK.glob(path.name + "*"):
        leftover.unlink()
    return str(path)
