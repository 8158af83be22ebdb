"""A private PostgreSQL cluster for the tests: initdb and pg_ctl in a temporary folder.

Never a system service, never a fixed port: the cluster listens on 127.0.0.1 only, on a free
port, with its unix socket in its own folder, and is removed at the end of the session. When
the tests run as root it runs as the unprivileged `postgres` user (PostgreSQL refuses root).
`make test` installs Debian's `postgresql` where it is missing (the Makefile's `postgres`).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.helpers.svc_process import free_port

USER = "svc"  # the cluster's superuser; local connections are trusted (a private cluster)


def binaries() -> Path:
    """The folder of initdb and pg_ctl: Debian keeps them per version, off the PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).resolve().parent
    raise RuntimeError("PostgreSQL is not installed (initdb, pg_ctl): run `make postgres`, "
                       "or `apt-get install postgresql`")


class Cluster:
    """One running cluster; `url(name)` gives a database URL, `create_database` makes one."""

    def __init__(self, prefix: tuple[str, ...] = ()) -> None:
        """`prefix` goes before every PostgreSQL command (the benchmark pins the cluster to
        the servers' CPU with `taskset -c 0`)."""
        self.bin = binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="svc-pg-"))
        self.data = self.folder / "data"
        self.sockets = self.folder / "sockets"
        self.sockets.mkdir()
        self.log = self.folder / "server.log"
        self.port = free_port()
        self._as_user: list[str] = list(prefix)
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            account = pwd.getpwnam("postgres")
            for path in (self.folder, self.sockets):
                os.chown(path, account.pw_uid, account.pw_gid)
            self._as_user += ["runuser", "-u", "postgres", "--"]
        self._names = 0

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        result = subprocess.run(self._as_user + [str(self.bin / args[0]), *args[1:]],
                                capture_output=True, text=True, timeout=timeout,
                                env={**os.environ, "PGCLIENTENCODING": "UTF8"})
        if result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {result.stderr or result.stdout}"
                               f"\n{self.server_log()}")
        return result

    def server_log(self) -> str:
        try:
            return self.log.read_text()[-3000:]
        except OSError:
            return ""

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")
        self.start()

    def start(self) -> None:
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 "
                   f"-c unix_socket_directories={self.sockets} -c fsync=off "
                   f"-c max_connections=200")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                  "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def processes(self) -> list[int]:
        """The postmaster and its children (the backends serving connections), from /proc."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                    children.append(int(entry.name))
        return [postmaster, *children]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement with psql; its unaligned output."""
        return self._run("psql", "-X", "-q", "-A", "-t", "-h", "127.0.0.1", "-p",
                         str(self.port), "-U", USER, "-d", database, "-c", statement).stdout

    def create_database(self) -> str:
        """A new, empty database; its URL."""
        self._names += 1
        name = f"test_{os.getpid()}_{self._names}_{int(time.time() * 1000) % 100000}"
        self.sql(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        try:
            self.stop("immediate")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.folder, ignore_errors=True)


def start_cluster(prefix: tuple[str, ...] = ()) -> Cluster:
    cluster = Cluster(prefix)
    try:
        cluster.init()
    except BaseException:
        cluster.remove()
        raise
    return cluster
