"""The PostgreSQL side of the SQL checker: the schema a program's migrations build, in a real
PostgreSQL server where one can be had, able to prepare (never run) each statement and
describe it (its parameters, its result columns' names, types and nullability).

Only PostgreSQL itself knows what PostgreSQL accepts (its types, operators, casts, functions),
so the check is as good as the server it can reach. Three levels, tried in this order, the
schema's `level` saying which ran and why:

1. `database_url` (`svcc check --database-url`): the user's own server. Everything happens
   inside one transaction that is rolled back at `close()`, in a schema of a random name made
   for the check (`search_path` points there), so the user's tables neither interfere nor
   change, and nothing persists. A migration that would end that transaction (BEGIN, COMMIT,
   ROLLBACK, PREPARE TRANSACTION) is refused before anything runs, at every level alike: svc
   applies each migration file in one transaction of its own (svc.runtime.db.migrations).
2. PostgreSQL's binaries (initdb, pg_ctl, postgres on the PATH, else the newest
   /usr/lib/postgresql/*/bin): a private cluster in a cache folder (postgres_cluster.py),
   made once (initdb takes a second); each list of migrations gets a database of its own,
   named by their SHA-256 and migrated once, so a check of unchanged migrations costs a
   server start and stop (about 0.3 s). The server listens on a unix socket in a private
   folder only, and runs only from the check's start to its `close()`. An `fcntl.flock` on
   the cache folder's lock file, held all that time, makes two checks at once (an editor's
   language server and `svcc check`, parallel tests) take turns instead of corrupting it.
   As root, PostgreSQL's commands run as the `postgres` user (PostgreSQL refuses root).
3. Neither: a syntax-only check by PostgreSQL's own parser (pglast), which cannot tell a
   misspelt column or a wrong type, nor describe a result. `SVC_CHECK_POSTGRES=syntax` forces
   this level (for tests, or a machine where starting a server is unwelcome); a private
   cluster that cannot start, or a database_url that cannot be reached, falls to it too.

Statements are prepared through libpq's own calls (psycopg's `pgconn`), unnamed, so nothing
needs deallocating: an unnamed statement lasts until the next one. An error aborts an open
transaction, so in the `database_url` transaction each refused statement rolls back to a
savepoint; the private cluster's connection has no transaction open (autocommit). A schema
left open at exit is closed by an `atexit` safety net, so no server outlives its process.
One process must not open two private-cluster schemas of one cache folder in one thread:
the second would wait for the first's lock forever.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psycopg
from pglast import parser as pg_parser
from psycopg import pq
from psycopg.pq.abc import PGresult

from svc.compiler.sql.postgres_cluster import (ClusterError, PrivateCluster, Runner, cache_folder,
                                               connect, find_binaries)
from svc.compiler.sql.schema import (MigrationFile, MigrationProblem, Prepared, ResultColumn,
                                     Schema, SqlProblem)

#: `SVC_CHECK_POSTGRES=syntax` forces the syntax-only level.
LEVEL_VARIABLE = "SVC_CHECK_POSTGRES"
_SYNTAX_ONLY = "syntax only: PostgreSQL's parser (pglast)"
_DISTINCT_NAME = "svc_check_"  # the schema made in the database of database_url
_OK = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK, pq.ExecStatus.EMPTY_QUERY)


def open_postgres_schema(migrations: list[MigrationFile], *, database_url: str | None = None,
                         cache_dir: str | None = None,
                         syntax_only: bool = False) -> Schema | MigrationProblem:
    """The schema `migrations` build, at the best level available (see the module's text).
    `cache_dir` is the private cluster's folder itself (default: see `cache_folder`);
    `syntax_only` asks for level 3 (the commands that must start fast: compiler/sql/schemas.py)."""
    if syntax_only:
        return open_syntax_only(migrations, "svcc check prepares them in PostgreSQL")
    if os.environ.get(LEVEL_VARIABLE) == "syntax":
        return open_syntax_only(migrations, f"{LEVEL_VARIABLE}=syntax")
    refused = transaction_control(migrations, strict=database_url is not None)
    if refused is not None:
        return refused
    if database_url:
        return _open_in_database(migrations, database_url)
    return _open_private_cluster(migrations, cache_dir)


# --- level 3: PostgreSQL's parser ---------------------------------------------------------


class SyntaxOnlySchema:
    """Statements checked by PostgreSQL's parser alone: no columns, no parameter count."""

    dialect = "postgresql"
    migrations_applied = False

    def __init__(self, why: str) -> None:
        self.level = f"{_SYNTAX_ONLY}; {why}"

    def prepare(self, sql: str) -> Prepared | SqlProblem:
        try:
            statements = pg_parser.parse_sql(sql)
        except pg_parser.ParseError as error:
            return SqlProblem(*_parse_error(error))
        if len(statements) > 1:  # what PostgreSQL says on preparing several
            return SqlProblem("cannot insert multiple commands into a prepared statement",
                              _start_of(sql, statements[1].stmt_location or 0))
        return Prepared(columns=None, parameters=None)

    def tables(self) -> dict[str, tuple[str, ...]]:
        return {}

    def close(self) -> None:
        pass


def open_syntax_only(migrations: list[MigrationFile], why: str
                     ) -> SyntaxOnlySchema | MigrationProblem:
    for migration in migrations:
        try:
            pg_parser.parse_sql(migration.text)
        except pg_parser.ParseError as error:
            message, offset = _parse_error(error)
            return MigrationProblem(migration.path, _line_of(migration.text, offset), message)
    return transaction_control(migrations, strict=False) or SyntaxOnlySchema(why)


def transaction_control(migrations: list[MigrationFile], *, strict: bool
                        ) -> MigrationProblem | None:
    """The first BEGIN, COMMIT, ROLLBACK (...) of the migrations: each file is applied in one
    transaction. A file the parser refuses is left to the server, unless `strict` (the
    user's database, where a COMMIT unseen would persist the check's schema)."""
    for migration in migrations:
        try:
            statements = pg_parser.parse_sql(migration.text)
        except pg_parser.ParseError as error:
            if not strict:
                continue
            message, offset = _parse_error(error)
            return MigrationProblem(migration.path, _line_of(migration.text, offset), message)
        for raw in statements:
            kind = getattr(raw.stmt, "kind", None)
            if type(raw.stmt).__name__ == "TransactionStmt" and kind is not None:
                word = kind.name.removeprefix("TRANS_STMT_").replace("_", " ")
                if word not in ("SAVEPOINT", "RELEASE", "ROLLBACK TO"):
                    start = _start_of(migration.text, raw.stmt_location or 0)
                    return MigrationProblem(
                        migration.path, _line_of(migration.text, start),
                        f"{word} in a migration: svc applies each migration file in one "
                        "transaction of its own")
    return None


def _parse_error(error: pg_parser.ParseError) -> tuple[str, int | None]:
    """pglast's message and 0-based character offset."""
    offset = error.args[1] if len(error.args) > 1 and isinstance(error.args[1], int) else None
    return str(error.args[0]), offset


def _start_of(text: str, location: int) -> int:
    """The offset of a statement's first character (pglast's location may precede blanks)."""
    return location + len(text[location:]) - len(text[location:].lstrip())


def _line_of(text: str, offset: int | None) -> int:
    return 1 if offset is None else text.count("\n", 0, offset) + 1


# --- levels 1 and 2: a server prepares --------------------------------------------------


@dataclass(frozen=True)
class _Refusal:
    """The server's words on a failed command, and where (0-based, in characters)."""

    message: str
    offset: int | None


def _refusal(result: PGresult) -> _Refusal | None:
    """None for a command that succeeded."""
    if result.status in _OK:
        return None
    primary = result.error_field(pq.DiagnosticField.MESSAGE_PRIMARY)
    position = result.error_field(pq.DiagnosticField.STATEMENT_POSITION)
    message = (primary or result.error_message or b"failed").decode("utf-8", "replace")
    return _Refusal(message.strip(), int(position) - 1 if position else None)


def _run(conn: psycopg.Connection, command: str) -> _Refusal | None:
    """One command (or a script of several) by the simple protocol, as migrations run."""
    return _refusal(conn.pgconn.exec_(command.encode("utf-8")))


@dataclass(frozen=True)
class _Transaction:
    """The commands around each migration file: a transaction, or a savepoint in one."""

    begin: str
    commit: str
    rollback: str


_OWN_TRANSACTION = _Transaction("BEGIN", "COMMIT", "ROLLBACK")
_SAVEPOINT = _Transaction("SAVEPOINT svc_migration", "RELEASE SAVEPOINT svc_migration",
                          "ROLLBACK TO SAVEPOINT svc_migration")


def apply_migrations(conn: psycopg.Connection, migrations: list[MigrationFile],
                     transaction: _Transaction) -> MigrationProblem | None:
    """Apply each file as one script in one transaction, as the runtime does; the first
    failure, at the line of its position (or of the statement that failed)."""
    for migration in migrations:
        _run(conn, transaction.begin)
        refused = _run(conn, migration.text)
        if refused is None:
            _run(conn, transaction.commit)
            continue
        _run(conn, transaction.rollback)
        offset = refused.offset
        if offset is None:
            offset = _failing_statement(conn, migration.text, transaction)
        return MigrationProblem(migration.path, _line_of(migration.text, offset),
                                refused.message)
    return None


def _failing_statement(conn: psycopg.Connection, text: str, transaction: _Transaction
                       ) -> int | None:
    """Where the statement starts that failed without saying where: the script run again,
    one statement at a time, and rolled back."""
    try:
        statements = pg_parser.parse_sql(text)
    except pg_parser.ParseError:
        return None
    _run(conn, transaction.begin)
    try:
        for raw in statements:
            start = raw.stmt_location or 0
            end = start + raw.stmt_len if raw.stmt_len else len(text)
            if _run(conn, text[start:end]) is not None:
                return _start_of(text, start)
    finally:
        _run(conn, transaction.rollback)
    return None


class ServerSchema:
    """Statements prepared in a server's database that the migrations built; `release` ends
    what holds it (the transaction, the private server)."""

    dialect = "postgresql"

    def __init__(self, conn: psycopg.Connection, *, namespace: str, level: str,
                 release: Callable[[], None], savepoint: bool, migrations_applied: bool
                 ) -> None:
        self.level = level
        self.migrations_applied = migrations_applied  # False: a cached database was reused
        self._conn = conn
        self._namespace = namespace
        self._release: Callable[[], None] | None = release
        self._savepoint = savepoint
        self._type_names: dict[int, str] = {}
        self._not_null: dict[tuple[int, int], bool | None] = {}
        self._tables: dict[str, tuple[str, ...]] | None = None
        if savepoint:
            _run(conn, "SAVEPOINT svc_prepare")
        atexit.register(self.close)

    def prepare(self, sql: str) -> Prepared | SqlProblem:
        pgconn = self._conn.pgconn
        refused = _refusal(pgconn.prepare(b"", sql.encode("utf-8")))
        if refused is None:
            described = pgconn.describe_prepared(b"")
            refused = _refusal(described)
        if refused is not None:
            if self._savepoint:  # the error aborted the transaction's work since the savepoint
                _run(self._conn, "ROLLBACK TO SAVEPOINT svc_prepare")
            return SqlProblem(refused.message, refused.offset)
        return Prepared(columns=self._columns(described), parameters=described.nparams)

    def _columns(self, described: PGresult) -> tuple[ResultColumn, ...]:
        fields = range(described.nfields)
        origins = [(described.ftable(i), described.ftablecol(i)) for i in fields]
        self._learn_types({described.ftype(i) for i in fields} - self._type_names.keys())
        self._learn_nullability({o for o in origins if o[0]} - self._not_null.keys())
        return tuple(
            ResultColumn(name=(described.fname(i) or b"?").decode("utf-8", "replace"),
                         db_type=self._type_names.get(described.ftype(i)),
                         nullable=self._nullable(origins[i]))
            for i in fields)

    def _nullable(self, origin: tuple[int, int]) -> bool | None:
        not_null = self._not_null.get(origin) if origin[0] else None
        return None if not_null is None else not not_null

    def _learn_types(self, oids: set[int]) -> None:
        if oids:
            rows = self._conn.execute(
                "SELECT t.oid, format_type(t.oid::oid, NULL) FROM unnest(%s::int8[]) AS t(oid)",
                [sorted(oids)]).fetchall()
            self._type_names.update({oid: name.lower() for oid, name in rows if name})

    def _learn_nullability(self, origins: set[tuple[int, int]]) -> None:
        """attnotnull of the columns of tables (a view's or a function's say nothing)."""
        if not origins:
            return
        rows = self._conn.execute(
            "SELECT c.rel, c.num, CASE WHEN k.relkind IN ('r', 'p') THEN a.attnotnull END "
            "FROM unnest(%s::int8[], %s::int4[]) AS c(rel, num) "
            "JOIN pg_attribute a ON a.attrelid = c.rel::oid AND a.attnum = c.num "
            "JOIN pg_class k ON k.oid = a.attrelid",
            [[o[0] for o in origins], [o[1] for o in origins]]).fetchall()
        self._not_null.update({origin: None for origin in origins})
        self._not_null.update({(rel, num): not_null for rel, num, not_null in rows})

    def tables(self) -> dict[str, tuple[str, ...]]:
        if self._tables is None:
            rows = self._conn.execute(
                "SELECT k.relname, array_agg(a.attname::text ORDER BY a.attnum) "
                "FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace "
                "JOIN pg_attribute a ON a.attrelid = k.oid "
                "AND a.attnum > 0 AND NOT a.attisdropped "
                "WHERE n.nspname = %s AND k.relkind IN ('r', 'p', 'v', 'm', 'f') "
                "GROUP BY k.relname ORDER BY k.relname", [self._namespace]).fetchall()
            self._tables = {name: tuple(columns) for name, columns in rows}
        return self._tables

    def close(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            atexit.unregister(self.close)
            release()


# --- level 1: the database of --database-url ---------------------------------------------


def _open_in_database(migrations: list[MigrationFile], url: str
                      ) -> ServerSchema | SyntaxOnlySchema | MigrationProblem:
    """A transaction in the user's database, rolled back at close: a schema of its own there,
    the migrations applied in it."""
    namespace = _DISTINCT_NAME + uuid.uuid4().hex[:12]
    try:
        conn = connect(conninfo=url)
    except psycopg.Error as error:
        return open_syntax_only(migrations, f"could not connect to --database-url: "
                                            f"{_first_line(error)}")
    try:
        refused = _run(conn, f"BEGIN; CREATE SCHEMA {namespace}; SET LOCAL search_path TO "
                             f"{namespace}; SET LOCAL lock_timeout = '10s'")
        if refused is not None:
            _end_transaction(conn)
            return open_syntax_only(migrations, "could not make a schema in the database of "
                                                f"--database-url: {refused.message}")
        problem = apply_migrations(conn, migrations, _SAVEPOINT)
    except BaseException:
        _end_transaction(conn)
        raise
    if problem is not None:
        _end_transaction(conn)
        return problem
    return ServerSchema(conn, namespace=namespace, savepoint=True, migrations_applied=True,
                        release=lambda: _end_transaction(conn),
                        level="prepared in the database of --database-url (inside a "
                              "transaction rolled back at the end)")


def _end_transaction(conn: psycopg.Connection) -> None:
    try:
        _run(conn, "ROLLBACK")
    finally:
        conn.close()  # the server rolls back a connection's transaction as it closes, anyway


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


# --- level 2: a private cluster --------------------------------------------------------------


def _open_private_cluster(migrations: list[MigrationFile], cache_dir: str | None
                          ) -> ServerSchema | SyntaxOnlySchema | MigrationProblem:
    binaries = find_binaries()
    if binaries is None:
        return open_syntax_only(migrations, "no PostgreSQL binaries (initdb, pg_ctl) were found")
    folder = Path(cache_dir) if cache_dir else cache_folder()
    runner = Runner.for_this_user(folder)
    if isinstance(runner, str):
        return open_syntax_only(migrations, runner)
    cluster = PrivateCluster(binaries, folder, runner)
    try:
        cluster.start()
        migrated = cluster.migrated_database(
            migrations, lambda conn: apply_migrations(conn, migrations, _OWN_TRANSACTION))
    except (OSError, subprocess.SubprocessError, psycopg.Error, ClusterError) as error:
        _stop_quietly(cluster)
        return open_syntax_only(migrations, "the private PostgreSQL cluster failed: "
                                            f"{_first_line(error)}")
    except BaseException:
        _stop_quietly(cluster)
        raise
    if isinstance(migrated, MigrationProblem):
        cluster.stop()
        return migrated
    conn, applied = migrated
    return ServerSchema(conn, namespace="public", savepoint=False, migrations_applied=applied,
                        release=lambda: _close_then(conn, cluster.stop),
                        level=f"prepared in a private PostgreSQL {cluster.major} cluster "
                              f"(cached in {_shown(folder)})")


def _stop_quietly(cluster: PrivateCluster) -> None:
    """Stop after a failure: the first failure is the one to report."""
    try:
        cluster.stop()
    except (OSError, subprocess.SubprocessError, ClusterError):
        pass


def _close_then(conn: psycopg.Connection, stop: Callable[[], None]) -> None:
    try:
        conn.close()
    finally:
        stop()


def _shown(folder: Path) -> str:
    home = str(Path.home())
    text = str(folder)
    return "~" + text[len(home):] if home != "/" and text.startswith(home + "/") else text
