"""The SQL check: each SQL text a program runs, checked against the schema its migrations
build on every dialect it declares (issue 33).

For each call found by statements.py whose text is known:

- its placeholders against its arguments (a `?3` with two arguments, an argument no
  placeholder uses), and one statement per call: from the text alone;
- the statement prepared on each dialect it can run on, as the runtime would send it
  (dialect_text.py): syntax, tables and columns (a misspelt name gets a did-you-mean),
  and on PostgreSQL each argument's type where the database infers one;
- for `db_all[T]` and `db_one[T]`, the result's columns against T: a column for each field,
  of a type that fits it, and a field that is not `T?` only for a column that cannot be NULL;
  a single-column T against the one column.

Each problem is a diagnostic at its place in the SQL literal where one is known, else at the
SQL argument. A program that declares no migrations is not checked (there is no schema).
"""

from __future__ import annotations

import re

from svc.compiler.check.context import suggest
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.program import CheckedProgram
from svc.compiler.source import SourceFile, Span
from svc.compiler.sql import column_types
from svc.compiler.sql.dialect_text import argument_kinds, for_dialect, lists_in_parentheses
from svc.compiler.sql.schema import (
    MigrationFile, MigrationProblem, Prepared, ResultColumn, Schema, SqlProblem,
)
from svc.compiler.sql.schemas import Schemas
from svc.compiler.sql.statements import SqlReport, SqlUse, sql_uses
from svc.compiler.svctypes import UNKNOWN, ClassRef, Opt, Type, format_type
from svc.rules.sql_params import NOT_VALUES
from svc.rules.sql_text import placeholders, statement_count


def check_sql(program: CheckedProgram, migrations: dict[str, list[MigrationFile]],
              schemas: Schemas, sources: dict[str, SourceFile]) -> SqlReport:
    """Check the program's SQL against the migrations (its own, or another version's:
    `svcc check --against`)."""
    report = SqlReport()
    if not migrations:
        return report
    opened: dict[str, Schema] = {}
    for dialect, steps in migrations.items():
        schema = schemas.get(dialect, steps)
        if isinstance(schema, MigrationProblem):
            report.diagnostics.append(_migration_diagnostic(schema, sources))
            continue
        opened[dialect] = schema
        report.levels[dialect] = schema.level
    for use in sql_uses(program):
        if use.sql is None:
            report.unchecked.append(use)
            continue
        report.checked += 1
        _Checker(use, program, sources, report).run(
            {d: s for d, s in opened.items() if d in use.dialects})
    return report


def _migration_diagnostic(problem: MigrationProblem, sources: dict[str, SourceFile]
                          ) -> Diagnostic:
    source = sources.get(problem.file)
    if source is None:
        try:
            with open(problem.file, encoding="utf-8", newline="") as f:
                source = sources[problem.file] = SourceFile(problem.file, f.read())
        except (OSError, UnicodeDecodeError):
            source = None
    width = len(source.line_text(problem.line)) if source else 1
    return Diagnostic(f"migration failed to apply: {problem.message}",
                      Span(problem.file, problem.line, 1, problem.line, max(width, 1) + 1))


class _Checker:
    """The checks of one call."""

    def __init__(self, use: SqlUse, program: CheckedProgram, sources: dict[str, SourceFile],
                 report: SqlReport) -> None:
        assert use.sql is not None
        self.use, self.program, self.sources, self.report = use, program, sources, report
        self.sql = use.sql.text

    def error(self, message: str, span: Span) -> None:
        """Report once (two dialects, or two calls using one constant, often find the same
        problem); a place outside the call names the call."""
        if (span, message) in self.report.reported:
            return
        self.report.reported.add((span, message))
        call = self.use.span
        if span.file != call.file or not call.line <= span.line <= call.end_line:
            message += f" (in the SQL of the {self.use.builtin} call at line {call.line})"
        self.report.diagnostics.append(Diagnostic(message, span))

    def at(self, offset: int | None, width: int = 1) -> Span:
        """The place of the SQL's characters at `offset`, or the SQL argument."""
        if offset is not None and self.use.sql is not None:
            span = self.use.sql.span_at(offset, width, self.sources)
            if span is not None:
                return span
        return self.use.sql_span

    def run(self, schemas: dict[str, Schema]) -> None:
        kinds = argument_kinds(self.use.arg_types)
        if not self.text_problems(kinds):
            for dialect, schema in schemas.items():
                self.prepared(dialect, schema, kinds)

    # --- from the text alone --------------------------------------------------------------

    def text_problems(self, kinds: tuple[str | None, ...]) -> bool:
        """Statements and placeholders against the arguments; whether any was reported."""
        found = False
        for number in sorted(lists_in_parentheses(self.sql, kinds)):
            if kinds[number - 1] == "json":
                shown = format_type(self.use.arg_types[number - 1] or UNKNOWN)
                self.error(f"{NOT_VALUES}; ?{number} is a {shown}",
                           self.use.call.args[number + 1].span)
                found = True
        statements = statement_count(self.sql)
        if statements > 1:
            self.error(f"one statement per call: this SQL of {self.use.builtin} holds "
                       f"{statements} statements (several belong in a migration)",
                       self.use.sql_span)
            found = True
        given = len(self.use.arg_types)
        used = set()
        for number, start, end in placeholders(self.sql):
            used.add(number)
            if number > given:
                self.error(f"?{number} has no argument: {self.use.builtin} is given {given} SQL "
                           f"argument{'' if given == 1 else 's'} after the SQL",
                           self.at(start, end - start))
                found = True
        for number in range(1, given + 1):
            if number not in used:
                arg = self.use.call.args[number + 1]
                self.error(f"SQL argument {number} is not used: the SQL has no ?{number}",
                           arg.span)
                found = True
        return found

    # --- prepared by the database ----------------------------------------------------------

    def prepared(self, dialect: str, schema: Schema, kinds: tuple[str | None, ...]) -> None:
        text = for_dialect(self.sql, dialect, kinds)
        outcome = schema.prepare(text.text)
        level = "" if schema.level.startswith("prepared") else ", syntax only"
        if isinstance(outcome, SqlProblem):
            offset = None if outcome.offset is None else text.original_offset(outcome.offset)
            self.database_error(dialect, level, schema, outcome.message, offset)
            return
        if self.use.row_type is not None and outcome.columns is not None:
            self.result_problems(dialect, outcome)

    def database_error(self, dialect: str, level: str, schema: Schema, message: str,
                       offset: int | None) -> None:
        name, kind = _missing_name(message)
        hint = ""
        if name is not None:
            tables = schema.tables()
            candidates = tables if kind == "table" else \
                {column for columns in tables.values() for column in columns}
            by_lower = {c.lower(): c for c in candidates}  # SQL names ignore case
            hint = suggest(name.rpartition(".")[2].lower(), by_lower)
            if hint:
                close = hint.split("'")[1]
                hint = hint.replace(f"'{close}'", f"'{by_lower[close]}'")
            if offset is None:
                offset = _word_offset(self.sql, name.rpartition(".")[2])
        if name and offset is not None:
            width = len(name.rpartition(".")[2])
        else:  # the word the database points at (a function's name, a keyword)
            word = re.match(r"\w+", self.sql[offset:]) if offset is not None else None
            width = len(word.group(0)) if word else 1
        self.error(f"SQL error ({dialect}{level}): {message}{hint}", self.at(offset, width))

    def result_problems(self, dialect: str, prepared: Prepared) -> None:
        columns = prepared.columns or ()
        row = self.use.row_type
        assert row is not None
        shown = f"{self.use.builtin}[{format_type(row)}]"
        if not columns:
            self.error(f"{shown} reads rows, but this statement returns none (add a RETURNING "
                       "clause, or run it with db_exec)", self.use.sql_span)
            return
        if not isinstance(row, ClassRef):
            if len(columns) != 1:
                self.error(f"{shown} reads one column, but the query gives {len(columns)} "
                           f"({', '.join(c.name for c in columns)})", self.use.sql_span)
            else:
                self.column_fits(dialect, columns[0], row, shown)
            return
        info = self.program.classes.get(row.name)
        if info is None:
            return
        by_name: dict[str, ResultColumn] = {}
        for column in columns:
            by_name.setdefault(column.name, column)
        missing = [name for name, _ in info.fields if name not in by_name]
        if missing:
            spare = [c.name for c in columns if c.name not in dict(info.fields)]
            hints = "".join(suggest(name, spare) for name in missing[:1])
            self.error(f"{shown}: the query gives no column for field"
                       f"{'s' if len(missing) > 1 else ''} "
                       f"{', '.join(row.name + '.' + name for name in missing)} (its columns: "
                       f"{', '.join(c.name for c in columns)}){hints}", self.use.sql_span)
        for name, field_type in info.fields:
            if name in by_name:
                self.column_fits(dialect, by_name[name], field_type, f"field {row.name}.{name}")

    def column_fits(self, dialect: str, column: ResultColumn, svc_type: Type, what: str) -> None:
        """A column's type and nullability against the svc type it fills."""
        place = self.at(_column_offset(self.sql, column.name), len(column.name))
        inner = svc_type.inner if isinstance(svc_type, Opt) else svc_type
        if column.db_type is not None and not column_types.fits(dialect, column.db_type, inner):
            self.error(f"column '{column.name}' is {column.db_type} ({dialect}), which does not "
                       f"fit {what} ({format_type(svc_type)})"
                       f"{column_types.advice(dialect, column.db_type, inner)}", place)
        if column.nullable and not isinstance(svc_type, Opt):
            self.error(f"column '{column.name}' may be NULL, but {what} is "
                       f"{format_type(svc_type)}: make it {format_type(svc_type)}?, or select "
                       f"COALESCE({column.name}, ...)", place)


_MISSING = (
    (re.compile(r"no such column: (\S+)"), "column"),
    (re.compile(r"no such table: (\S+)"), "table"),
    (re.compile(r'column "?([^"\s]+)"? does not exist'), "column"),
    (re.compile(r'relation "([^"]+)" does not exist'), "table"),
)


def _missing_name(message: str) -> tuple[str | None, str]:
    """The misspelt name a database error is about, and whether it is a table or a column."""
    for pattern, kind in _MISSING:
        m = pattern.search(message)
        if m:
            return m.group(1), kind
    return None, ""


def _word_offset(sql: str, word: str, start: int = 0, end: int | None = None) -> int | None:
    """Where `word` is first written as a whole word in sql[start:end], or None."""
    pattern = re.compile(r"(?<![\w$])" + re.escape(word) + r"(?![\w$])", re.IGNORECASE)
    m = pattern.search(sql, start, len(sql) if end is None else end)
    return m.start() if m else None


def _column_offset(sql: str, name: str) -> int | None:
    """Where a result column is named: its last mention in the list of a RETURNING or of the
    first SELECT (an alias comes after its expression), else its first mention anywhere."""
    upper = sql.upper()
    start = upper.rfind("RETURNING")
    if start < 0:
        start = upper.find("SELECT")
    if start >= 0:
        end = upper.find(" FROM ", start)
        found = None
        at = _word_offset(sql, name, start, None if end < 0 else end)
        while at is not None:
            found = at
            at = _word_offset(sql, name, at + 1, None if end < 0 else end)
        if found is not None:
            return found
    return _word_offset(sql, name)
