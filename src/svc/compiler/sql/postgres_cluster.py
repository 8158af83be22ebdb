"""The SQL checker's private PostgreSQL cluster (postgres_schema.py's second level): made once
in a cache folder, started for one check, its migrated databases kept for the next.

Why a cache: initdb takes about a second and applying a program's migrations may take more,
while a check of unchanged migrations should take a fraction of that; so the cluster stays on
disk (one per PostgreSQL major version, whose data folders differ), and each list of
migrations gets a database of its own, named by the SHA-256 of their texts and migrated once
(the KEEP_DATABASES most recently used are kept). Only the server does not stay: each check
starts it, listening on a unix socket in a private temporary folder and nowhere else, and
stops it at its end, so no server outlives the check that needed it.

Why a lock: two checks at once (an editor's language server and `svcc check`, parallel tests)
would both initdb, both start a server on one data folder, both make one database. Each check
holds an `fcntl.flock` on `<cache>/lock` from before its server starts until after it stopped;
the second waits. The kernel drops the lock of a killed process, which may leave its server
running (stopped by the next check, `_stop_orphan`) or a stale `postmaster.pid` (which the
server ignores as it starts, when no live process has its number).

Why runuser: PostgreSQL refuses to run as root, so as root its commands run as the `postgres`
user, which owns the cluster's folders and must be able to reach them (root's home is closed
to it, so root's default cache is /var/cache/svc/postgres).
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psycopg
from psycopg.conninfo import make_conninfo

from svc.compiler.sql.schema import MigrationFile, MigrationProblem

#: How many migrated databases the private cluster keeps (the most recently used).
KEEP_DATABASES = 4
#: The private cluster's superuser; its unix socket trusts local connections.
SUPERUSER = "svc"
#: The private server's port: only the name of its socket file, `.s.PGSQL.<port>`.
PORT = "5432"
_PREFIX = "svc_"  # the migrated databases: svc_<sha256 of the migrations>
_SOCKETS_PREFIX = "svc-check-pg-"  # the temporary folder of a server's socket

#: Applies the migrations in a connection to a new database: None, or the failure.
Migrate = Callable[[psycopg.Connection], MigrationProblem | None]


def connect(conninfo: str = "", **where: str) -> psycopg.Connection:
    """A connection in autocommit (transactions are explicit), speaking UTF-8."""
    return psycopg.connect(make_conninfo(conninfo, **where, client_encoding="UTF8",
                                         connect_timeout=20), autocommit=True)


def find_binaries() -> Path | None:
    """The folder of initdb, pg_ctl and postgres: the PATH's (a deliberate install), else
    Debian's newest /usr/lib/postgresql/<major>/bin (Debian keeps them off the PATH)."""
    def complete(folder: Path) -> bool:
        return all(os.access(folder / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres"))

    on_path = shutil.which("pg_ctl")
    if on_path and complete(Path(on_path).resolve().parent):
        return Path(on_path).resolve().parent
    versions = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if complete(Path(p))]
    versions.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return versions[-1] if versions else None


def cache_folder() -> Path:
    """`<base>/postgres`: $SVC_CACHE_DIR, else $XDG_CACHE_HOME/svc or ~/.cache/svc (as root
    /var/cache/svc: root's home is closed to the `postgres` user the server runs as)."""
    if os.environ.get("SVC_CACHE_DIR"):
        base = Path(os.environ["SVC_CACHE_DIR"]).absolute()
    elif os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"]) / "svc"
    elif os.geteuid() == 0:
        base = Path("/var/cache/svc")
    else:
        base = Path.home() / ".cache" / "svc"
    return base / "postgres"


class ClusterError(Exception):
    """A PostgreSQL command failed (its output and the server log's end say why)."""


@dataclass(frozen=True)
class Runner:
    """How PostgreSQL's commands run: as this user, or (as root) as `postgres` by runuser."""

    prefix: tuple[str, ...]
    owner: tuple[int, int] | None  # (uid, gid) that must own the cluster's folders

    @staticmethod
    def for_this_user(folder: Path) -> Runner | str:
        """The runner, or why none can run PostgreSQL here."""
        if os.geteuid() != 0:
            return Runner((), None)
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            return ("running as root, which PostgreSQL refuses, and there is no `postgres` "
                    "user to run it as")
        runuser = shutil.which("runuser")
        if runuser is None:
            return "running as root, which PostgreSQL refuses, and runuser is missing"
        closed = _closed_ancestor(folder, account.pw_uid, account.pw_gid)
        if closed is not None:
            return (f"running as root, and the `postgres` user PostgreSQL runs as cannot "
                    f"reach {closed} (set SVC_CACHE_DIR to a folder it can reach)")
        return Runner((runuser, "-u", "postgres", "--"), (account.pw_uid, account.pw_gid))

    def run(self, program: Path, *args: str, cwd: Path, timeout: float = 120
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, str(program), *args], cwd=cwd, text=True,
                              capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def own(self, path: Path) -> None:
        if self.owner is not None:
            os.chown(path, *self.owner)


def _closed_ancestor(folder: Path, uid: int, gid: int) -> Path | None:
    """The first existing folder above `folder` that `uid` may not pass through, if any."""
    for ancestor in reversed(folder.absolute().parents):
        try:
            status = ancestor.stat()
        except FileNotFoundError:
            return None  # made later, by root, passable (0o755)
        if status.st_uid == uid:
            allowed = status.st_mode & 0o100
        elif status.st_gid == gid:
            allowed = status.st_mode & 0o010
        else:
            allowed = status.st_mode & 0o001
        if not allowed:
            return ancestor
    return None


class PrivateCluster:
    """The cached cluster of one PostgreSQL major version, started for one check.

    Layout of the cache folder: `lock` (the flock), `<major>/data` (initdb's),
    `<major>/server.log`, `<major>/databases/<name>` (an empty file per migrated database,
    written once its migrations succeeded; its time of change is the database's last use).
    """

    def __init__(self, binaries: Path, folder: Path, runner: Runner) -> None:
        self.binaries = binaries
        self.folder = folder
        self.runner = runner
        self.major = ""
        self._lock: int | None = None
        self._sockets: Path | None = None
        self._running = False

    @property
    def _home(self) -> Path:
        return self.folder / self.major

    @property
    def data(self) -> Path:
        return self._home / "data"

    def start(self) -> None:
        """Lock the cache, make the cluster if missing, start its server on a private socket.
        A cluster whose server will not start is only a cache: it is made again, once."""
        self._make_folder(self.folder)
        self._lock = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self.major = self._major_version()
        self._make_folder(self._home)
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        self._stop_orphan()
        try:
            self._start_server()
        except (ClusterError, subprocess.SubprocessError):
            self._stop_server_quietly()
            self._initdb()
            self._start_server()

    def _start_server(self) -> None:
        """Listening on a unix socket in a new private folder only. Without fsync (a cache
        need not survive a power cut); with synchronous commits, so that a migrated database
        survives a killed server (its marker is written after the commit)."""
        self._sockets = self._sockets or Path(tempfile.mkdtemp(prefix=_SOCKETS_PREFIX))
        self.runner.own(self._sockets)
        settings = {"listen_addresses": "", "unix_socket_directories": str(self._sockets),
                    "port": PORT, "fsync": "off", "full_page_writes": "off"}
        options = " ".join(f"-c {shlex.quote(f'{name}={value}')}"  # pg_ctl runs a shell
                           for name, value in settings.items())
        self._running = True  # from here on, stop() stops what may have started
        self._pg_ctl("start", "-w", "-t", "60", "-l", str(self._home / "server.log"),
                     "-o", options)

    def stop(self) -> None:
        """Stop the server (if started), remove its socket folder, release the lock."""
        try:
            if self._running:
                self._running = False
                self._stop_server()
        finally:
            if self._sockets is not None:
                shutil.rmtree(self._sockets, ignore_errors=True)
                self._sockets = None
            if self._lock is not None:
                os.close(self._lock)  # releases the flock
                self._lock = None

    def _stop_server_quietly(self) -> None:
        try:
            self._stop_server()
        except (ClusterError, subprocess.SubprocessError):
            pass
        self._running = False

    def _stop_server(self) -> None:
        """pg_ctl's fast stop (sessions ended, no waiting for clients); immediate if that
        fails while the server still runs (a server already gone is stopped)."""
        try:
            self._pg_ctl("stop", "-m", "fast", "-w", "-t", "30")
        except (ClusterError, subprocess.SubprocessError):
            if self._server_pid() is not None:
                self._pg_ctl("stop", "-m", "immediate", "-w", "-t", "30")

    def _server_pid(self) -> int | None:
        """The live process postmaster.pid names, if any."""
        pid = self._pid_file_line(0)
        return int(pid) if pid and pid.isdigit() and _alive(int(pid)) else None

    def _make_folder(self, folder: Path) -> None:
        """Made passable (a umask of 077 would close it to the `postgres` user), and owned
        by the user PostgreSQL runs as."""
        missing = [path for path in (folder, *folder.parents) if not path.exists()]
        for path in reversed(missing):
            path.mkdir(exist_ok=True)
            if self.runner.owner is not None:
                path.chmod(0o755)
        self.runner.own(folder)

    def _major_version(self) -> str:
        words = self._command("pg_ctl", "--version").stdout.split()
        return words[2].split(".")[0] if len(words) > 2 else "unknown"

    def _initdb(self) -> None:
        """Made under another name, renamed when complete: a cluster half made by a killed
        check is made again."""
        fresh = self._home / "data.new"
        for old in (fresh, self.data, self._home / "databases"):
            shutil.rmtree(old, ignore_errors=True)
        self._command("initdb", "-D", str(fresh), "-U", SUPERUSER, "--auth=trust", "-E",
                      "UTF8", "--locale=C", "--no-sync")
        fresh.rename(self.data)

    def _stop_orphan(self) -> None:
        """A server left running by a check killed before its close (we hold the lock, so no
        check uses it) is stopped. A postmaster.pid naming no live process, the server
        ignores as it starts; one naming another live process (the number reused), it would
        not: that file is removed."""
        pid = self._server_pid()
        if pid is not None and _serves(pid, self.data):
            sockets = self._pid_file_line(4)  # the orphan's socket folder, left behind too
            self._stop_server()
            if sockets and Path(sockets).name.startswith(_SOCKETS_PREFIX):
                shutil.rmtree(sockets, ignore_errors=True)
        elif pid is not None:
            (self.data / "postmaster.pid").unlink()

    def _pid_file_line(self, number: int) -> str | None:
        """A line of postmaster.pid (0: the pid; 4: the first socket folder), if any."""
        try:
            return (self.data / "postmaster.pid").read_text().splitlines()[number].strip()
        except (OSError, IndexError):
            return None

    def _pg_ctl(self, *args: str) -> None:
        self._command("pg_ctl", "-D", str(self.data), *args)

    def _command(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        result = self.runner.run(self.binaries / program, *args, cwd=self.folder)
        if result.returncode != 0:
            raise ClusterError(f"{program} {args[0]} failed: "
                               f"{(result.stderr or result.stdout).strip()}{self._log_end()}")
        return result

    def _log_end(self) -> str:
        try:
            return "\n" + (self._home / "server.log").read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def connect(self, database: str) -> psycopg.Connection:
        assert self._sockets is not None, "the server is not started"
        return connect(host=str(self._sockets), port=PORT, user=SUPERUSER, dbname=database)

    def migrated_database(self, migrations: list[MigrationFile], migrate: Migrate
                          ) -> tuple[psycopg.Connection, bool] | MigrationProblem:
        """A connection to the database of these migrations (made and migrated if new) and
        whether the migrations were applied now; or why one failed."""
        name = database_name(migrations)
        marker = self._home / "databases" / name
        if marker.exists():
            try:
                conn = self.connect(name)
            except psycopg.OperationalError:
                marker.unlink()  # the database is gone (dropped by hand): made again below
            else:
                os.utime(marker)
                return conn, False
        return self._migrate_new(name, marker, migrate)

    def _migrate_new(self, name: str, marker: Path, migrate: Migrate
                     ) -> tuple[psycopg.Connection, bool] | MigrationProblem:
        with self.connect("postgres") as maintenance:
            _checked(maintenance, f'DROP DATABASE IF EXISTS "{name}"')
            _checked(maintenance, f'CREATE DATABASE "{name}"')
            with self.connect(name) as migrating:
                problem = migrate(migrating)
            if problem is not None:
                _checked(maintenance, f'DROP DATABASE "{name}"')
                return problem
            marker.parent.mkdir(exist_ok=True)
            marker.touch()
            self._drop_unused(maintenance, keep=name)
        return self.connect(name), True

    def _drop_unused(self, maintenance: psycopg.Connection, keep: str) -> None:
        """All but the KEEP_DATABASES most recently used migrated databases are dropped."""
        names = [row[0] for row in maintenance.execute(
            "SELECT datname FROM pg_database WHERE starts_with(datname, %s)", [_PREFIX])]

        def last_use(name: str) -> float:
            try:
                return (self._home / "databases" / name).stat().st_mtime
            except OSError:
                return 0.0

        names.sort(key=lambda n: (n == keep, last_use(n)), reverse=True)
        for old in names[KEEP_DATABASES:]:
            (self._home / "databases" / old).unlink(missing_ok=True)
            _checked(maintenance, f'DROP DATABASE "{old}"')


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _serves(pid: int, data: Path) -> bool:
    """Whether process `pid` is a server of `data` (a postmaster works in its data folder);
    without /proc to tell, assumed so."""
    if not Path("/proc").is_dir():
        return True
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(data.resolve())
    except OSError:
        return False


def _checked(conn: psycopg.Connection, command: str) -> None:
    """A maintenance command (simple protocol: CREATE DATABASE runs in no transaction)."""
    result = conn.pgconn.exec_(command.encode("utf-8"))
    if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
        message = (result.error_message or b"").decode(errors="replace").strip()
        raise ClusterError(f"{command}: {message}")


def database_name(migrations: list[MigrationFile]) -> str:
    """`svc_` and the SHA-256 of the migrations' texts (each hashed, so file boundaries
    count), cut to fit PostgreSQL's 63-byte names."""
    digest = hashlib.sha256()
    for migration in migrations:
        digest.update(hashlib.sha256(migration.text.encode("utf-8")).digest())
    return _PREFIX + digest.hexdigest()[:40]
