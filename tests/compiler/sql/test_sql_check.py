"""The SQL check on SQLite: a project's SQL against the schema its declared migrations build.

Each typical mistake is a diagnostic with its words and its place in the `.svc` file; good
SQL passes. (PostgreSQL's side: test_postgres_check.py; the command line: test_sql_cli.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from svc import pipeline
from svc.compiler.diagnostics import render_all

SCHEMA = """CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT,
    age INTEGER NOT NULL DEFAULT 0
);
"""

HEADER = """class User:
    id: i64
    name: str
    email: str?

class Count:
    n: i64

"""


def project(tmp_path: Path, body: str, migrations: dict[str, str] | None = None,
            toml_extra: str = "") -> Path:
    """A project whose SQLite migrations are `migrations` (file name → text)."""
    folder = tmp_path / "app"
    (folder / "migrations" / "sqlite").mkdir(parents=True)
    for name, text in (migrations or {"001_users.sql": SCHEMA}).items():
        (folder / "migrations" / "sqlite" / name).write_text(text)
    (folder / "svc.toml").write_text('entry = "app.svc"\n[migrations]\nsqlite = "migrations/sqlite"\n'
                                     + toml_extra)
    (folder / "app.svc").write_text(HEADER + body)
    return folder


def check(folder: Path) -> str:
    """The rendered diagnostics ('' when the program is good)."""
    result = pipeline.check(pipeline.Target(project=str(folder)))
    if isinstance(result, pipeline.Failed):
        return render_all(result.diagnostics, result.sources)
    return ""


MAIN = "\nasync def main() -> Result[unit, Error]:\n    return ok(())\n"


def function(*lines: str) -> str:
    """A function running `lines`, and a main."""
    return "async def f(db: Db) -> Result[unit, Error]:\n" + "".join(
        f"    {line}\n" for line in lines) + "    return ok(())\n" + MAIN


def test_good_sql_passes(tmp_path: Path) -> None:
    body = function(
        'users = try await db_all[User](db, "SELECT id, name, email FROM users WHERE age > ?1", 3)',
        'one = try await db_one[User](db, "INSERT INTO users (name) VALUES (?1) RETURNING id, name, email", "ann")',
        'n = try await db_exec(db, "DELETE FROM users WHERE id IN (?1)", [1, 2])',
        'c = try await db_one[Count](db, "SELECT COUNT(*) AS n FROM users")')
    assert check(project(tmp_path, body)) == ""


@pytest.mark.parametrize("line, words, marked", [
    # a misspelt column, pointed at in the string, with the closest name
    ('try await db_exec(db, "UPDATE users SET nmae = ?1", "x")',
     "SQL error (sqlite): no such column: nmae; did you mean 'name'?", "nmae"),
    # a misspelt table
    ('try await db_exec(db, "DELETE FROM user WHERE id = ?1", 1)',
     "SQL error (sqlite): no such table: user; did you mean 'users'?", "user"),
    # a placeholder without an argument
    ('try await db_exec(db, "UPDATE users SET name = ?1 WHERE id = ?2", "x")',
     "?2 has no argument: db_exec is given 1 SQL argument after the SQL", "?2"),
    # a syntax error
    ('try await db_exec(db, "UPDAT users SET name = ?1", "x")',
     'SQL error (sqlite): near "UPDAT": syntax error', "U"),
])
def test_a_mistake_in_the_sql_is_shown_in_the_string(tmp_path: Path, line: str, words: str,
                                                     marked: str) -> None:
    shown = check(project(tmp_path, function(line)))
    assert f"error: {words}\n" in shown, shown
    source_line, caret_line = shown.splitlines()[3:5]
    start = caret_line.index("^")
    assert source_line[start:].startswith(marked.split()[0][:len(caret_line.strip())]), shown


def test_an_argument_the_sql_does_not_use_is_reported_at_the_argument(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function(
        'try await db_exec(db, "DELETE FROM users WHERE id = ?1", 1, "extra")')))
    assert "error: SQL argument 2 is not used: the SQL has no ?2" in shown
    assert '"extra")\n' in shown and "^^^^^^^" in shown


def test_two_statements_in_one_call(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function(
        'try await db_exec(db, "DELETE FROM users; DELETE FROM users")')))
    assert "one statement per call: this SQL of db_exec holds 2 statements" in shown


def test_a_field_without_a_column_names_the_field_and_the_closest_column(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function(
        'u = try await db_one[User](db, "SELECT id, name AS nam, email FROM users")')))
    assert ("db_one[User]: the query gives no column for field User.name (its columns: id, nam, "
            "email); did you mean 'nam'?") in shown


def test_a_column_of_another_type_or_nullable_does_not_fit_the_field(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function(
        'u = try await db_all[User](db, "SELECT age AS id, email AS name, email FROM users")')))
    assert "column 'name' may be NULL, but field User.name is str: make it str?, or select " \
           "COALESCE(name, ...)" in shown
    body = "class Wrong:\n    name: i64\n\n" + function(
        'w = try await db_all[Wrong](db, "SELECT name FROM users")')
    shown = check(project(tmp_path / "2", body))
    assert "column 'name' is text (sqlite), which does not fit field Wrong.name (i64)" in shown


def test_rows_from_a_statement_that_returns_none(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function(
        'u = try await db_one[User](db, "INSERT INTO users (name) VALUES (?1)", "a")')))
    assert "db_one[User] reads rows, but this statement returns none (add a RETURNING clause, " \
           "or run it with db_exec)" in shown


def test_a_constant_used_by_several_calls_is_reported_once_naming_a_call(tmp_path: Path) -> None:
    body = 'COLUMNS: str = "id, nam, email"\n\n' + function(
        'a = try await db_all[User](db, "SELECT " + COLUMNS + " FROM users")',
        'b = try await db_one[User](db, "SELECT " + COLUMNS + " FROM users WHERE id = ?1", 1)')
    shown = check(project(tmp_path, body))
    assert shown.count("no such column: nam; did you mean 'name'?") == 1, shown
    assert "(in the SQL of the db_all call at line" in shown
    assert 'COLUMNS: str = "id, nam, email"' in shown


def test_texts_built_in_the_function_are_followed(tmp_path: Path) -> None:
    body = function('sql = "SELECT id, name, email FROM users"',
                    'sql += " WHERE agee = ?1"',
                    'u = try await db_all[User](db, sql, 1)')
    assert "no such column: agee; did you mean 'age'?" in check(project(tmp_path, body))


def test_sql_built_at_run_time_is_not_checked(tmp_path: Path) -> None:
    body = ("def table() -> str:\n    return \"nothing\"\n\n" + function(
        'try await db_exec(db, "DELETE FROM " + table())',
        'sql = "DELETE FROM users"',
        "if 1 > 2:",
        '    sql = "DELETE FROM nowhere"',
        "try await db_exec(db, sql)"))
    assert check(project(tmp_path, body)) == ""


def test_sql_under_a_dialect_test_is_checked_on_that_dialect_only(tmp_path: Path) -> None:
    body = function('if db_dialect(db) == "postgresql":',
                    '    try await db_exec(db, "SELECT pg_only_function()")',
                    'try await db_exec(db, "SELECT nothing_here()")')
    shown = check(project(tmp_path, body))
    assert "pg_only_function" not in shown and "no such function: nothing_here" in shown
    early = ("async def g(db: Db) -> Result[i64, Error]:\n"
             '    if db_dialect(db) == "sqlite":\n'
             '        return await db_exec(db, "DELETE FROM users")\n'
             '    return await db_exec(db, "SELECT pg_only()")\n' + MAIN)
    assert check(project(tmp_path / "2", early)) == ""


def test_a_single_column_result_must_have_one_column(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function(
        'n = try await db_one[i64](db, "SELECT id, age FROM users")')))
    assert "db_one[i64] reads one column, but the query gives 2 (id, age)" in shown


def test_a_migration_that_fails_names_its_file_and_line(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function(), {
        "001_users.sql": SCHEMA,
        "002_bad.sql": "-- a comment\nALTER TABLE users ADD COLUMN x INTEGER;\n\n"
                       "CREATE INDEX ix ON users (nope);\n"}))
    assert "error: migration failed to apply: no such column: nope" in shown
    assert "002_bad.sql:4:" in shown


def test_db_migrate_forms_follow_the_declaration(tmp_path: Path) -> None:
    shown = check(project(tmp_path, function('try await db_migrate(db, ["CREATE TABLE t (x)"])')))
    assert "so db_migrate takes no steps: write db_migrate(db)" in shown
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "main.svc").write_text(function("try await db_migrate(db)"))
    result = pipeline.check(pipeline.Target(file=str(folder / "main.svc")))
    assert isinstance(result, pipeline.Failed)
    assert "db_migrate(db) applies the migrations svc.toml declares, and this program declares " \
           "none" in result.diagnostics[0].message


@pytest.mark.parametrize("table, words", [
    ('[migrations]\nmysql = "m"\n', "unknown key 'mysql' in svc.toml [migrations] (allowed: "
                                    "sqlite, postgresql"),
    ('[migrations]\nsqlite = 3\n', "'sqlite' in svc.toml [migrations] must be a string naming "
                                   "a folder of .sql files"),
    ('[migrations]\nsqlite = "missing"\n', "the migrations folder 'missing' does not exist"),
])
def test_a_bad_migrations_table_is_reported_at_its_key(tmp_path: Path, table: str,
                                                       words: str) -> None:
    (tmp_path / "svc.toml").write_text('entry = "app.svc"\n' + table)
    (tmp_path / "app.svc").write_text(function())
    shown = check(tmp_path)
    assert words in shown and "svc.toml:3:1" in shown, shown


def test_a_program_without_migrations_is_not_checked(tmp_path: Path) -> None:
    (tmp_path / "main.svc").write_text(function('try await db_exec(db, "DELETE FROM nowhere")'))
    assert isinstance(pipeline.check(pipeline.Target(file=str(tmp_path / "main.svc"))),
                      pipeline.Checked)
