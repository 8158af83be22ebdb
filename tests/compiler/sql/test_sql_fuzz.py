"""Fuzzing the SQL check: random SQL in a call, and random migrations, must only ever give
diagnostics (or pass), never an exception. Seeded, so a failure is reproducible.

`SVC_FUZZ_EXAMPLES` sets the count, as for test_fuzz.py.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from svc import pipeline
from svc.compiler.diagnostics import render_all
from svc.compiler.sql.schemas import Schemas

EXAMPLES = int(os.environ.get("SVC_FUZZ_EXAMPLES", "300")) // 2
SEED = int(os.environ.get("SVC_FUZZ_SEED", "20261127"))
PIECES = ["SELECT", "INSERT INTO", "UPDATE", "DELETE FROM", "users", "usr", "id", "name", ",",
          "*", "(", ")", "?1", "?2", "?", "?9", "'", "''", '"', "--", "/*", "*/", ";", "$1",
          "$$", "IN (?1)", "RETURNING", "WHERE", "=", "AS", "n", "VALUES", "COUNT(*)",
          "NULL", "é", "\\n", "FROM", "JOIN", "ON", "x.", "REGEXP", "::", "CAST(", "text"]
ARGS = ["1", '"a"', "True", "None", "[1, 2]", '["a"]', "2.5", 'to_bytes("b")']
MIGRATION_PIECES = ["CREATE TABLE", "t", "(", ")", "x", "INTEGER", "TEXT", "NOT NULL", ",",
                    ";", "PRIMARY KEY", "REFERENCES", "CREATE INDEX i ON", "DROP TABLE", "'",
                    "--", "\n", "ALTER TABLE", "ADD COLUMN", "BEGIN", "END", "TRIGGER"]


def sql_call(rng: random.Random) -> str:
    sql = " ".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
    args = ", ".join(rng.choice(ARGS) for _ in range(rng.randint(0, 3)))
    builtin = rng.choice(["db_exec", "db_all[Row]", "db_one[Row]", "db_one[i64]"])
    literal = '"' + sql.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return (f"    x = await {builtin}(db, {literal}{', ' if args else ''}{args})\n")


def write(folder: Path, call: str, migration: str) -> None:
    (folder / "migrations" / "sqlite").mkdir(parents=True, exist_ok=True)
    (folder / "migrations" / "postgresql").mkdir(parents=True, exist_ok=True)
    (folder / "migrations" / "sqlite" / "001.sql").write_text(migration)
    (folder / "migrations" / "postgresql" / "001.sql").write_text(migration)
    (folder / "svc.toml").write_text('entry = "app.svc"\n[migrations]\nsqlite = "migrations/sqlite"\n'
                                     'postgresql = "migrations/postgresql"\n')
    (folder / "app.svc").write_text("class Row:\n    id: i64\n    name: str?\n\n"
                                    "async def f(db: Db) -> Result[unit, Error]:\n" + call +
                                    "    return ok(())\n\ndef main():\n    pass\n")


def test_random_sql_and_migrations_only_give_diagnostics(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    good = "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n"
    outcomes = {"passed": 0, "diagnostics": 0}
    with Schemas(postgres="syntax") as schemas:
        for index in range(EXAMPLES):
            migration = good if index % 4 else " ".join(
                rng.choice(MIGRATION_PIECES) for _ in range(rng.randint(1, 15)))
            folder = tmp_path / str(index % 3)
            write(folder, sql_call(rng), migration)
            try:
                result = pipeline.check(pipeline.Target(project=str(folder)), schemas=schemas)
                if isinstance(result, pipeline.Failed):
                    render_all(result.diagnostics, result.sources)  # renders too
                    outcomes["diagnostics"] += 1
                else:
                    outcomes["passed"] += 1
            except Exception as exc:  # noqa: BLE001 - the point of the test
                raise AssertionError(f"seed {SEED}, example {index}: {exc!r}\n"
                                     f"{(folder / 'app.svc').read_text()}\n{migration}") from exc
    assert outcomes["diagnostics"] > EXAMPLES // 2, outcomes  # the fuzzing reached the check
