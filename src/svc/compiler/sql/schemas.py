"""The open schemas of one checking session: started on first use, kept by dialect and
migrations, and closed in one place (`close`).

A command makes one `Schemas`, checks, and closes it; the language server keeps one for its
whole life, so each keystroke's check reuses the schemas the last one built. How PostgreSQL
is checked is the session's choice (`postgres`):

- "prepare": in a private cluster (or `database_url`), the full check (`svcc check`);
- "syntax": PostgreSQL's parser only (`svcc run`, `build`, `test` and the language server,
  which must answer fast, check the SQLite side fully, and must not hold the private
  cluster's lock for an editor's whole session).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from svc.compiler.sql.migration_files import migrations_hash
from svc.compiler.sql.schema import MigrationFile, MigrationProblem, Schema


@dataclass
class Schemas:
    postgres: str = "prepare"  # or "syntax"
    database_url: str | None = None
    _open: dict[tuple[str, str], Schema | MigrationProblem] = field(default_factory=dict)

    def get(self, dialect: str, steps: list[MigrationFile]) -> Schema | MigrationProblem:
        """The schema `steps` build on `dialect` (opened once per session and steps)."""
        key = (dialect, migrations_hash(steps))
        found = self._open.get(key)
        if found is None:
            for (old_dialect, _), old in list(self._open.items()):
                if old_dialect == dialect and not isinstance(old, MigrationProblem):
                    old.close()  # the migrations changed: one schema per dialect at a time
            self._open = {k: v for k, v in self._open.items() if k[0] != dialect}
            found = self._open[key] = self._make(dialect, steps)
        return found

    def _make(self, dialect: str, steps: list[MigrationFile]) -> Schema | MigrationProblem:
        # imported here: a program without migrations (most commands' runs) never needs them
        if dialect == "sqlite":
            from svc.compiler.sql.sqlite_schema import open_sqlite_schema

            return open_sqlite_schema(steps)
        from svc.compiler.sql.postgres_schema import open_postgres_schema

        if self.postgres == "syntax":
            return open_postgres_schema(steps, syntax_only=True)
        return open_postgres_schema(steps, database_url=self.database_url)

    def close(self) -> None:
        for schema in self._open.values():
            if not isinstance(schema, MigrationProblem):
                schema.close()
        self._open.clear()

    def __enter__(self) -> Schemas:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
