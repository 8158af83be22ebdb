"""`svcc check` on SQL as a user runs it (real subprocesses, a real git repository):
the `sql:` line, `--unchecked`, `--against REV` for rolling deploys, and `db_migrate(db)`
applying the declared files when the program runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.svc_process import run_to_end

V1_MIGRATION = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL, due TEXT);\n"
V2_MIGRATION = "ALTER TABLE notes DROP COLUMN due;\nALTER TABLE notes ADD COLUMN due_at TEXT;\n"
PROGRAM = """class Note:
    id: i64
    text: str

async def dated(db: Db) -> Result[List[Note], Error]:
    return await db_all[Note](db, "SELECT id, text FROM notes WHERE DUE IS NOT NULL")

def table() -> str:
    return "notes"

async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    print(str(try await db_migrate(db)))
    try await db_exec(db, "INSERT INTO notes (text) VALUES (?1)", "milk")
    print(str(len(try await db_all[Note](db, "SELECT id, text FROM " + table()))))
    print(str(try await db_migrate(db)))
    return ok(())
"""


def write_project(folder: Path, program: str, migrations: list[str]) -> None:
    (folder / "migrations" / "sqlite").mkdir(parents=True, exist_ok=True)
    for number, text in enumerate(migrations, 1):
        (folder / "migrations" / "sqlite" / f"{number:03}.sql").write_text(text)
    (folder / "svc.toml").write_text('entry = "notes.svc"\n[migrations]\nsqlite = "migrations/sqlite"\n')
    (folder / "notes.svc").write_text(program)


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder,
                   check=True, capture_output=True)


def test_check_says_what_it_checked_and_lists_the_unchecked(tmp_path: Path) -> None:
    write_project(tmp_path, PROGRAM, [V1_MIGRATION])
    result = run_to_end(["check", "--project", ".", "--unchecked"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "notes.svc:15:29: db_all: SQL built at run time, not checked"
    assert lines[1] == "ok: notes.svc (1 file, 0 routes)"
    assert lines[2].startswith("sql: 2 statements checked, sqlite prepared in an in-memory SQLite")
    assert lines[2].endswith("; 1 built at run time, not checked (--unchecked lists them)")


def test_db_migrate_applies_the_declared_files_once(tmp_path: Path) -> None:
    write_project(tmp_path, PROGRAM, [V1_MIGRATION, "CREATE INDEX notes_text ON notes (text);\n"])
    result = run_to_end(["run", "--project", "."], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["2", "1", "0"]


def test_against_a_git_revision_finds_the_old_sql_the_new_migrations_break(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    project = repo / "service"
    project.mkdir(parents=True)
    write_project(project, PROGRAM, [V1_MIGRATION])
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v1")
    git(repo, "tag", "v1")
    # v2 renames due to due_at, and its own SQL follows
    write_project(project, PROGRAM.replace("DUE IS NOT", "due_at IS NOT"),
                  [V1_MIGRATION, V2_MIGRATION])
    assert run_to_end(["check", "--project", "service"], cwd=repo).returncode == 0
    result = run_to_end(["check", "--project", "service", "--against", "v1"], cwd=repo)
    assert result.returncode == 1, result.stdout
    assert ("error: SQL error (sqlite): no such column: DUE; did you mean 'due_at'? (the version "
            "at v1 runs this SQL; the new migrations would break it)\n --> v1:notes.svc:6:69"
            ) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    # a release that only adds a column keeps v1 working
    write_project(project, PROGRAM, [V1_MIGRATION, "ALTER TABLE notes ADD COLUMN due_at TEXT;\n"])
    result = run_to_end(["check", "--project", "service", "--against", "v1"], cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "ok: the SQL of v1 (2 statements) works with these migrations" in result.stdout


def test_against_a_folder_and_a_bad_revision(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        folder.mkdir()
    write_project(old, PROGRAM, [V1_MIGRATION])
    write_project(new, PROGRAM.replace("DUE IS NOT", "due_at IS NOT"), [V1_MIGRATION, V2_MIGRATION])
    result = run_to_end(["check", "--project", str(new), "--against", str(old)], cwd=tmp_path)
    assert result.returncode == 1 and "no such column: DUE" in result.stderr
    result = run_to_end(["check", "--project", str(new), "--against", "no-such-rev"], cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error: --against no-such-rev: not a folder")
    assert "Traceback" not in result.stderr


def test_every_statement_of_the_task_manager_is_checked_on_both_databases() -> None:
    """The flagship example: its SQL prepared on SQLite and in a private PostgreSQL cluster,
    none of it built at run time."""
    repo = Path(__file__).resolve().parents[3]
    result = run_to_end(["check", "--project", "examples/tasks", "--unchecked"], cwd=repo,
                        timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ok: "), lines  # nothing listed as unchecked before it
    assert lines[1].startswith("sql: 15 statements checked, sqlite prepared in an in-memory")
    assert "; postgresql prepared in a private PostgreSQL" in lines[1]
    assert "built at run time" not in lines[1]
