"""The migrations a program declares: svc.toml's `[migrations]` names a folder per dialect,
whose `.sql` files, in the order of their names, are the steps.

    [migrations]
    sqlite = "migrations/sqlite"
    postgresql = "migrations/postgresql"

Declared, not computed: the compiler reads the files, checks the program's SQL against the
schema they build, and embeds their texts, so `db_migrate(db)` applies exactly what was
checked (and a built executable carries them). `migrate_calls` holds each `db_migrate` call to
the declaration (no list in a declaring program, no `db_migrate(db)` without one).
"""

from __future__ import annotations

import hashlib
import os

from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram
from svc.compiler.sql.schema import MigrationFile

#: The dialects a program can declare migrations for.
DIALECTS = ("sqlite", "postgresql")


def migrations_problem(table: dict) -> tuple[str, str] | None:
    """(key, message) for the first `[migrations]` entry svc.toml may not hold, or None."""
    for key, value in table.items():
        if key not in DIALECTS:
            return key, (f"unknown key '{key}' in svc.toml [migrations] (allowed: "
                         f"{', '.join(DIALECTS)}: the folder of each database's migration "
                         "files)")
        if not isinstance(value, str) or not value.strip():
            return key, (f"'{key}' in svc.toml [migrations] must be a string naming a folder of "
                         f".sql files, relative to the project (\"migrations/{key}\")")
    return None


def read_migrations(project_dir: str, folder: str) -> list[MigrationFile] | str:
    """The steps of one declared folder, in name order; or why there are none."""
    path = os.path.normpath(os.path.join(project_dir, folder))
    if not os.path.isdir(path):
        return f"the migrations folder '{folder}' does not exist (looked for {path})"
    names = sorted(name for name in os.listdir(path) if name.endswith(".sql"))
    if not names:
        return f"the migrations folder '{folder}' holds no .sql files"
    steps = []
    for name in names:
        file = os.path.join(path, name)
        try:
            with open(file, encoding="utf-8", newline="") as f:  # the text as is: its hash
                steps.append(MigrationFile(file, f.read()))  # is recorded when applied
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return f"cannot read the migration {file}: {reason}"
    return steps


def migrations_hash(steps: list[MigrationFile]) -> str:
    """One hash of the steps' texts, in order: what a cached schema is kept by."""
    digest = hashlib.sha256()
    for step in steps:
        digest.update(hashlib.sha256(step.text.encode("utf-8")).digest())
    return digest.hexdigest()


def migrate_calls(program: CheckedProgram) -> list[Diagnostic]:
    """Each `db_migrate` call against the declaration: `db_migrate(db)` applies what svc.toml
    declares, so it needs a `[migrations]` table; a program that has one applies it whole,
    never a list of its own (the checked schema must be the applied one)."""
    found = []
    for node in (n for module in program.modules for item in module.items
                 for n in syntax.walk(item)):
        if not (isinstance(node, syntax.Call) and node.call_kind == "builtin"
                and node.target == "db_migrate"):
            continue
        if len(node.args) == 1 and not program.migrations:
            found.append(Diagnostic(
                "db_migrate(db) applies the migrations svc.toml declares, and this program "
                "declares none: add a [migrations] table to svc.toml (sqlite = "
                "\"migrations/sqlite\", a folder of .sql files), or pass the steps: "
                "db_migrate(db, steps)", node.span))
        elif len(node.args) == 2 and program.migrations:
            found.append(Diagnostic(
                "this program declares its migrations in svc.toml [migrations], so "
                "db_migrate takes no steps: write db_migrate(db) (it applies the declared "
                "files, the schema its SQL is checked against)", node.args[1].span))
    return found
