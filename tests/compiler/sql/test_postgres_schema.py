"""The PostgreSQL schema of the SQL checker (svc.compiler.sql.postgres_schema): real servers,
no mocks. The private cluster lives in one cache folder for the whole module ($SVC_CACHE_DIR),
so it is made once (initdb) and each test's check is a server start, a prepare or two and a
stop; the `--database-url` level runs in the suite's own cluster (tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from svc.compiler.sql.postgres_cluster import (KEEP_DATABASES, PrivateCluster, Runner,
                                               find_binaries)
from svc.compiler.sql.postgres_schema import (ServerSchema, SyntaxOnlySchema,
                                              open_postgres_schema)
from svc.compiler.sql.schema import (MigrationFile, MigrationProblem, Prepared, ResultColumn,
                                     SqlProblem)

TASKS = MigrationFile("migrations/001_tasks.sql", """\
CREATE TABLE tasks (
    id bigserial PRIMARY KEY,
    title text NOT NULL,
    note text,
    done boolean NOT NULL DEFAULT false,
    data jsonb,
    score double precision
);
""")
OPEN_TASKS = MigrationFile("migrations/002_open_tasks.sql", """\
ALTER TABLE tasks ADD COLUMN price numeric(10, 2);
CREATE VIEW open_tasks AS SELECT id, title FROM tasks WHERE NOT done;
""")
MIGRATIONS = [TASKS, OPEN_TASKS]

SELECT_TASK = ("SELECT id, title, note, done, data, score, price, count(*) OVER () AS total "
               "FROM tasks WHERE id = $1::bigint AND title = $2::text")
SELECT_TASK_COLUMNS = (
    ResultColumn("id", "bigint", False), ResultColumn("title", "text", False),
    ResultColumn("note", "text", True), ResultColumn("done", "boolean", False),
    ResultColumn("data", "jsonb", True), ResultColumn("score", "double precision", True),
    ResultColumn("price", "numeric", True), ResultColumn("total", "bigint", None))


@pytest.fixture(scope="module", autouse=True)
def cache_base():
    """$SVC_CACHE_DIR for the module: a folder of /tmp that the `postgres` user can reach
    (as root the server runs as that user; pytest's own temporary folders are closed to it)."""
    base = Path(tempfile.mkdtemp(prefix="svc-pg-check-"))
    base.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SVC_CACHE_DIR", str(base))
        patch.delenv("SVC_CHECK_POSTGRES", raising=False)
        yield base
    shutil.rmtree(base, ignore_errors=True)


def opened(migrations: list[MigrationFile], **options: str) -> ServerSchema:
    schema = open_postgres_schema(migrations, **options)
    assert isinstance(schema, ServerSchema), schema
    return schema


@pytest.fixture(scope="class")
def schema():
    """The tasks schema in the private cluster: one check (started, then stopped) for a class
    of tests. It holds the cache's lock, so no other check of the module may run meanwhile."""
    opened_schema = opened(MIGRATIONS)
    yield opened_schema
    opened_schema.close()


class TestOneCheck:
    """Statements prepared in one check of the tasks schema."""

    def test_a_statement_is_described_with_its_columns_types_and_nullability(self, schema,
                                                                              cache_base):
        assert schema.level == (f"prepared in a private PostgreSQL {find_binaries_major()} "
                                f"cluster (cached in {cache_base / 'postgres'})")
        assert schema.prepare(SELECT_TASK) == Prepared(SELECT_TASK_COLUMNS, 2)
        assert schema.prepare("SELECT id FROM tasks WHERE id IN (SELECT unnest($1::bigint[]))"
                              ) == Prepared((ResultColumn("id", "bigint", False),), 1)
        assert schema.prepare("INSERT INTO tasks (title, data) VALUES ($1::text, $2::jsonb) "
                              "RETURNING id") == Prepared((ResultColumn("id", "bigint", False),),
                                                          2)
        assert schema.prepare("UPDATE tasks SET note = NULL WHERE id = $1::bigint"
                              ) == Prepared((), 1)
        # a view's columns say nothing of NULL
        assert schema.prepare("SELECT title FROM open_tasks") == Prepared(
            (ResultColumn("title", "text", None),), 0)


    def test_the_tables_and_views_are_listed_with_their_columns_in_order(self, schema):
        assert schema.tables() == {
            "open_tasks": ("id", "title"),
            "tasks": ("id", "title", "note", "done", "data", "score", "price")}


    def test_a_misspelt_column_is_refused_where_it_is_written(self, schema):
        sql = "SELECT id, titel FROM tasks WHERE id = $1::bigint"
        problem = schema.prepare(sql)
        assert problem == SqlProblem('column "titel" does not exist', sql.index("titel"))
        # the offset counts characters, not bytes
        sql = "SELECT 'naïve', titel FROM tasks"
        assert schema.prepare(sql) == SqlProblem('column "titel" does not exist',
                                                 sql.index("titel"))


    def test_a_parameter_of_the_wrong_type_is_refused_and_the_session_goes_on(self, schema):
        sql = "SELECT id FROM tasks WHERE id = $1::text"
        problem = schema.prepare(sql)
        assert isinstance(problem, SqlProblem)
        assert problem.message == "operator does not exist: bigint = text"
        assert problem.offset == sql.index("= $1")
        assert schema.prepare("SELECT id, title FROM tasks WHERE title = $1::text").parameters == 1


    def test_several_statements_and_syntax_errors_are_refused(self, schema):
        problem = schema.prepare("SELECT 1; SELECT 2")
        assert isinstance(problem, SqlProblem) and "multiple commands" in problem.message
        assert schema.prepare("SELEC id FROM tasks") == SqlProblem(
            'syntax error at or near "SELEC"', 0)


def test_a_second_check_of_the_same_migrations_reuses_their_database():
    migrations = [MigrationFile("m/001.sql", "CREATE TABLE once (id bigint PRIMARY KEY);")]
    first = opened(migrations)
    first.close()
    second = opened(migrations)
    try:
        assert (first.migrations_applied, second.migrations_applied) == (True, False)
        assert second.tables() == {"once": ("id",)}
    finally:
        second.close()


def test_a_failing_migration_is_named_by_its_file_and_the_line_of_the_error():
    added = MigrationFile("migrations/003_seed.sql", "-- seed\nALTER TABLE tasks ADD due date;\n\n"
                                                     "INSERT INTO tasks (titel) VALUES ('x');\n")
    assert open_postgres_schema([*MIGRATIONS, added]) == MigrationProblem(
        "migrations/003_seed.sql", 4, 'column "titel" of relation "tasks" does not exist')


def test_a_failing_statement_without_a_position_is_found_by_its_line():
    again = MigrationFile("migrations/003_again.sql", "CREATE TABLE notes (id bigint);\n"
                                                      "-- again:\nCREATE TABLE tasks (id int);")
    problem = MigrationProblem("migrations/003_again.sql", 3, 'relation "tasks" already exists')
    assert open_postgres_schema([*MIGRATIONS, again]) == problem
    assert open_postgres_schema([*MIGRATIONS, again]) == problem  # a failure is not cached


def test_a_migration_ending_its_transaction_is_refused():
    committing = MigrationFile("m/002.sql", "CREATE TABLE a (id int);\nCOMMIT;\n")
    assert open_postgres_schema([TASKS, committing]) == MigrationProblem(
        "m/002.sql", 2, "COMMIT in a migration: svc applies each migration file in one "
                        "transaction of its own")


def test_the_database_url_level_leaves_the_database_untouched(postgres_cluster):
    url = postgres_cluster.create_database()
    database = url.rsplit("/", 1)[1]
    postgres_cluster.sql("CREATE TABLE tasks (other int); INSERT INTO tasks VALUES (7)", database)
    before = postgres_cluster.sql(_SNAPSHOT, database)
    in_database = opened(MIGRATIONS, database_url=url)
    try:
        assert in_database.level == ("prepared in the database of --database-url (inside a "
                                     "transaction rolled back at the end)")
        assert in_database.prepare(SELECT_TASK) == Prepared(SELECT_TASK_COLUMNS, 2)
        assert isinstance(in_database.prepare("SELECT titel FROM tasks"), SqlProblem)
        assert in_database.prepare("SELECT other FROM tasks") == SqlProblem(
            'column "other" does not exist', 7)  # the user's own tasks are out of sight
        assert in_database.prepare("SELECT title FROM tasks").columns == (
            ResultColumn("title", "text", False),)  # a refused statement poisons nothing
        assert set(in_database.tables()) == {"tasks", "open_tasks"}
    finally:
        in_database.close()
    in_database.close()
    assert postgres_cluster.sql(_SNAPSHOT, database) == before
    failing = MigrationFile("m/003.sql", "CREATE TABLE kept (id int);\nSELECT nope;")
    assert open_postgres_schema([*MIGRATIONS, failing], database_url=url) == MigrationProblem(
        "m/003.sql", 2, 'column "nope" does not exist')
    assert postgres_cluster.sql(_SNAPSHOT, database) == before


_SNAPSHOT = ("SELECT string_agg(n.nspname || '.' || c.relname, ',' ORDER BY 1) FROM pg_class c "
             "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN "
             "('pg_catalog', 'information_schema', 'pg_toast'); "
             "SELECT string_agg(nspname, ',' ORDER BY 1) FROM pg_namespace; "
             "SELECT * FROM public.tasks")


def test_the_syntax_only_level_uses_postgresql_s_parser(monkeypatch):
    monkeypatch.setenv("SVC_CHECK_POSTGRES", "syntax")
    syntax = open_postgres_schema(MIGRATIONS)
    assert isinstance(syntax, SyntaxOnlySchema)
    assert syntax.level == "syntax only: PostgreSQL's parser (pglast); SVC_CHECK_POSTGRES=syntax"
    assert syntax.prepare(SELECT_TASK) == Prepared(columns=None, parameters=None)
    assert syntax.prepare("SELECT titel FROM tasks") == Prepared(None, None)  # cannot tell
    assert syntax.prepare("SELECT id FROM WHERE id = $1::bigint") == SqlProblem(
        'syntax error at or near "WHERE"', 15)
    assert syntax.tables() == {}
    broken = MigrationFile("m/002.sql", "CREATE TABLE a (id int);\nCREATE TABLE b (id int,);")
    assert open_postgres_schema([TASKS, broken]) == MigrationProblem(
        "m/002.sql", 2, 'syntax error at or near ")"')
    syntax.close()


def test_two_checks_at_once_take_turns():
    """Two threads (each its own lock file descriptor, as two processes would be) open the
    same new migrations at once: the second waits for the first, and reuses its database."""
    migrations = [MigrationFile("m/001.sql", "CREATE TABLE turns (id bigint);")]
    spans: list[tuple[float, float, bool]] = []

    def check() -> None:
        schema = opened(migrations)
        began = time.monotonic()
        assert schema.prepare("SELECT id FROM turns").columns == (
            ResultColumn("id", "bigint", True),)
        time.sleep(0.2)
        schema.close()
        spans.append((began, time.monotonic(), schema.migrations_applied))

    threads = [threading.Thread(target=check) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    (first_began, first_ended, first_applied), (second_began, _, second_applied) = sorted(spans)
    assert second_began >= first_ended
    assert (first_applied, second_applied) == (True, False)


def test_a_killed_server_or_a_killed_check_does_not_wedge_the_cache(cache_base):
    data = cache_base / "postgres" / find_binaries_major() / "data"
    schema = opened(MIGRATIONS)
    os.kill(int((data / "postmaster.pid").read_text().split()[0]), 9)
    schema.close()  # its server is gone: close says nothing
    assert (data / "postmaster.pid").exists()  # stale
    # a check killed before its close leaves its server running, with the lock free
    subprocess.run([sys.executable, "-c", "import os\n"
                    "from svc.compiler.sql.schema import MigrationFile as M\n"
                    "from svc.compiler.sql.postgres_schema import open_postgres_schema as o\n"
                    "o([M('m', 'CREATE TABLE t (id int)')]).prepare('SELECT 1')\n"
                    "os._exit(0)"], check=True,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    orphan = int((data / "postmaster.pid").read_text().split()[0])
    schema = opened(MIGRATIONS)
    try:
        assert schema.prepare(SELECT_TASK) == Prepared(SELECT_TASK_COLUMNS, 2)
        assert not Path(f"/proc/{orphan}/cwd").exists()  # stopped, not left beside ours
    finally:
        schema.close()
    assert not (data / "postmaster.pid").exists()


def test_only_the_most_recently_used_databases_are_kept(cache_base):
    runner = Runner.for_this_user(cache_base / "postgres")
    assert isinstance(runner, Runner)
    binaries = find_binaries()
    assert binaries is not None
    cluster = PrivateCluster(binaries, cache_base / "postgres", runner)
    cluster.start()
    try:
        for number in range(KEEP_DATABASES + 1):
            migrated = cluster.migrated_database(
                [MigrationFile("m", f"-- {number}")], lambda conn: None)
            assert isinstance(migrated, tuple)
            migrated[0].close()
        with cluster.connect("postgres") as conn:
            kept = conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'svc\\_%'"
                                ).fetchone()
        assert kept == (KEEP_DATABASES,)
    finally:
        cluster.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only")
def test_as_root_a_folder_closed_to_the_postgres_user_is_said():
    reason = Runner.for_this_user(Path("/root/.cache/svc/postgres"))
    assert isinstance(reason, str) and "cannot reach /root" in reason


def find_binaries_major() -> str:
    binaries = find_binaries()
    assert binaries is not None, "PostgreSQL is not installed (make postgres)"
    return subprocess.run([str(binaries / "pg_ctl"), "--version"], capture_output=True,
                          text=True, check=True).stdout.split()[2].split(".")[0]
