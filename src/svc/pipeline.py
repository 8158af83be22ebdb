"""The pipeline: the one path from a program's files to code objects, for every command.

    read svc.toml (a project) ─ imports: read and parse each file ─ check ─ routes
      ─ SQL against the declared migrations ─ effects (the routes run again after a
      clash) ─ generate (Python AST) ─ compile()
      ─▶ one code object per .svc file

`check(target)` runs the steps up to the SQL check (what `svcc check` and a language server
need; the SQL check's `Schemas` say how far PostgreSQL is checked, compiler/sql/schemas.py); `compile(target)` continues to code objects (what `svcc run` and `svcc build` need).
Both return plain data: `Checked` or `Compiled` when the program is good, else `Failed` with
every diagnostic and the sources to show them with. Nothing here prints or raises for bad
input. Only a program without diagnostics goes on to the next step, but within the check
step every file's errors are collected together, so one run reports them all.
"""

from __future__ import annotations

import ast
import builtins
import os
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from svc.compiler.check import checker, config_class
from svc.compiler.codegen import generator as codegen
from svc.compiler.effects.retries import mark_retried
from svc.compiler.front import syntax
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.front.imports import Overlay, load_modules, read_source
from svc.compiler.program import CheckedProgram
from svc.compiler.check.guards import build_guard_table
from svc.compiler.check.routes import build_routes
from svc.compiler.source import SourceFile, Span
from svc.compiler.sql.migration_files import migrate_calls, read_migrations
from svc.compiler.sql.statements import SqlReport
from svc.compiler.svctypes import UNIT, Type
from svc.compiler.check.context import suggest
from svc.dependencies.environment import python_path
from svc.dependencies.verify import environment_problem
from svc.project import (Project, config_key_position, config_path, limit_position,
                         load_project, migrations_key_position, table_position)
from svc.rules.traffic import guard_limit_problem, route_limit_problem

if TYPE_CHECKING:  # imported when a program declares migrations (_check_sql)
    from svc.compiler.sql.schemas import Schemas

#: (the .svc file's path, its code object), one per file, in load order (entry last).
CodeList = list[tuple[str, types.CodeType]]


@dataclass(frozen=True)
class Target:
    """The program to work on: an entry file, or a project folder holding svc.toml."""

    file: str | None = None
    project: str | None = None
    # `svcc test`: test files compiled with the program, after it (never by run or build).
    tests: tuple[str, ...] = ()

    @property
    def display_name(self) -> str:
        """How to name the target to a user: the file as given, or the project folder's own
        name with where it is (`tasks (examples/tasks)`; `.` becomes an absolute path)."""
        if self.project is None:
            return self.file or ""
        folder = os.path.normpath(self.project)
        name = os.path.basename(os.path.abspath(folder))
        if os.path.basename(folder) != name:  # ".", "..", "sub/..": say where that is
            folder = os.path.abspath(folder)
        return name if folder == name or not name else f"{name} ({folder})"


@dataclass(frozen=True)
class Failed:
    """The diagnostics that stopped the pipeline, and the sources to render them with."""

    diagnostics: list[Diagnostic]
    sources: dict[str, SourceFile]
    # When the check step ran: the program as far as it could be checked (an editor still
    # offers hover and go to definition in a file with type errors).
    program: CheckedProgram | None = None


@dataclass(frozen=True)
class Checked:
    """A program without diagnostics: typed, annotated, with its route table."""

    program: CheckedProgram
    sources: dict[str, SourceFile]
    project_dir: str | None  # project mode: relative database paths resolve against it
    # What the SQL check did (statements checked, those built at run time, each dialect's level)
    sql: SqlReport = field(default_factory=SqlReport)


@dataclass(frozen=True)
class Compiled:
    """A checked program and its code, ready to run or to pack into an executable."""

    program: CheckedProgram
    code: CodeList
    project_dir: str | None


def check(target: Target, overlay: Overlay | None = None,
          schemas: Schemas | None = None, sql: bool = True,
          environment: bool = True) -> Checked | Failed:
    """Read, follow imports, parse, check, build the route table and check the SQL. `overlay`
    gives texts that stand in for files on disk (a language server's open documents);
    `schemas` the session's open schemas (without: SQLite fully and PostgreSQL's syntax,
    opened and closed here); `sql=False` stops before the SQL check (`svcc check --against`
    checks an older version's SQL against other migrations); `environment=False` skips the
    check that a project's installed Python packages are those svc.lock records (that older
    version's checkout has none installed)."""
    sources: dict[str, SourceFile] = {}
    entry, project_dir, project = target.file, None, None
    if target.project is not None:
        project, diagnostics = _read_project(target.project, sources)
        if project is not None and environment:
            diagnostics = _environment_diagnostics(project, sources)
        if project is None or diagnostics:
            return Failed(diagnostics, sources)
        entry, project_dir = project.entry, os.path.normpath(target.project)
    assert entry is not None, "a Target names a file or a project"
    modules, module_sources, diagnostics = load_modules(entry, overlay, target.tests)
    sources.update(module_sources)
    if diagnostics:
        return Failed(diagnostics, sources)
    program, diagnostics = check_modules(modules, os.path.normpath(entry), project_dir)
    if project is not None:
        program.settings = project.settings
        if not diagnostics:
            diagnostics = _config_diagnostics(program, project, sources) \
                + _guard_limit_diagnostics(program, project, sources) \
                + _route_limit_diagnostics(program, project, sources) \
                + _read_migrations(program, project, sources)
    report = SqlReport()
    if not diagnostics:
        diagnostics = migrate_calls(program)
    if not diagnostics and sql and program.migrations:
        report = _check_sql(program, sources, schemas)
        diagnostics = sorted(report.diagnostics, key=Diagnostic.sort_key)
    if diagnostics:
        return Failed(diagnostics, sources, program)
    mark_retried(program)
    return Checked(program, sources, project_dir, report)


def _check_sql(program: CheckedProgram, sources: dict[str, SourceFile],
               schemas: Schemas | None) -> SqlReport:
    """The SQL check (imported only for a program that declares migrations: it brings APSW and
    PostgreSQL's libraries)."""
    from svc.compiler.sql.check_sql import check_sql
    from svc.compiler.sql.schemas import Schemas

    if schemas is not None:
        return check_sql(program, program.migrations, schemas, sources)
    with Schemas(postgres="syntax") as own:
        return check_sql(program, program.migrations, own, sources)


def _read_migrations(program: CheckedProgram, project: Project,
                     sources: dict[str, SourceFile]) -> list[Diagnostic]:
    """svc.toml's `[migrations]` read into `program.migrations` (a folder that is missing or
    holds no .sql file is reported at its key)."""
    found = []
    for dialect, folder in project.migrations.items():
        steps = read_migrations(project.directory, folder)
        if isinstance(steps, str):
            toml = sources[os.path.normpath(config_path(project.directory))]
            line, col = migrations_key_position(toml, dialect)
            found.append(Diagnostic(steps, Span(toml.path, line, col, line, col + len(dialect))))
            continue
        program.migrations[dialect] = steps
        program.included_files.extend(step.path for step in steps)
    return found


def _config_diagnostics(program: CheckedProgram, project: Project,
                        sources: dict[str, SourceFile]) -> list[Diagnostic]:
    """svc.toml's `[config]` checked against the program's configuration classes: each key
    read by one, its value fitting (check/config_class.py), reported at the key."""
    toml = sources[os.path.normpath(config_path(project.directory))]
    found = []
    for key, message in config_class.table_problems(program, project.config):
        line, col = config_key_position(toml, key)
        found.append(Diagnostic(message, Span(toml.path, line, col, line, col + len(key))))
    return found


def _guard_limit_diagnostics(program: CheckedProgram, project: Project,
                             sources: dict[str, SourceFile]) -> list[Diagnostic]:
    """svc.toml's `[guard_limits]` checked against the routes' guards: each table names a
    guard some route runs, whose Ok value is a class (svc.rules.traffic), reported at its header."""
    limits = project.settings.tables.get("guard_limits", {})
    if not limits:
        return []
    kinds: dict[str, set[str]] = {}
    for route in program.routes:
        for use in route.guards:
            kinds.setdefault(use.guard, set()).add("unit" if use.value == UNIT else "class")
    toml = sources[os.path.normpath(config_path(project.directory))]
    found = []
    for name in limits:
        message = guard_limit_problem(name, kinds.get(name, set()))
        if message is not None:
            line, col = limit_position(toml, "guard_limits", name, name)
            found.append(Diagnostic(message, Span(toml.path, line, col, line, col + len(name))))
    return found


def _route_limit_diagnostics(program: CheckedProgram, project: Project,
                             sources: dict[str, SourceFile]) -> list[Diagnostic]:
    """svc.toml's `[route_limits]` checked against the routes: each table names a route of the
    program as declared (`"POST /login"`), reported at its header with the closest route."""
    limits = project.settings.tables.get("route_limits", {})
    if not limits:
        return []
    declared = {f"{route.method} {route.path}" for route in program.routes}
    toml = sources[os.path.normpath(config_path(project.directory))]
    found = []
    for name in limits:
        message = route_limit_problem(name, declared, suggest(name, declared))
        if message is not None:
            line, col = limit_position(toml, "route_limits", name, name)
            width = len(name) + 2  # with its quotes
            found.append(Diagnostic(message, Span(toml.path, line, col, line, col + width)))
    return found


def compile(target: Target) -> Compiled | Failed:
    """`check`, then generate Python and compile it: one code object per `.svc` file, whose
    file name is that `.svc` path, so run-time faults point at the user's file and line."""
    checked = check(target)
    if isinstance(checked, Failed):
        return checked
    return compile_checked(checked)


def compile_checked(checked: Checked) -> Compiled:
    """The generate and compile steps of `compile`, for a command that looks at the checked
    program first (`svcc test` checks the test functions' signatures)."""
    code = [(path, builtins.compile(module, filename=path, mode="exec"))
            for path, module in generate(checked)]
    return Compiled(checked.program, code, checked.project_dir)


def check_modules(modules: list[syntax.Module], entry: str, root: str | None = None
                  ) -> tuple[CheckedProgram, list[Diagnostic]]:
    """The check and routes steps over parsed modules (load order: `entry` last, or followed
    only by test files and what they alone import); `root` is the program's folder (the
    project's; the entry file's when None). Route rules
    are checked even when a body has errors, so both kinds are reported in one run."""
    folder = root or os.path.dirname(entry) or "."
    program, diagnostics = checker.check(modules, entry, folder, _python_path(root, folder))

    def field_types(class_name: str) -> list[Type]:
        info = program.classes.get(class_name)
        return [t for _, t in info.fields] if info else []

    guards = build_guard_table(modules, program.functions, program.references, diagnostics)
    program.routes, route_diagnostics = build_routes(program.functions.values(), field_types,
                                                     guards)
    return program, sorted(diagnostics + route_diagnostics, key=Diagnostic.sort_key)


def _python_path(project_dir: str | None, folder: str) -> tuple[str, ...]:
    """Where `@python` declarations import from first: the project's installed packages (a
    lone file's folder counts as its project when it holds svc.toml)."""
    if project_dir is None and not os.path.isfile(config_path(folder)):
        return ()
    return python_path(project_dir or folder)


def generate(checked: Checked) -> list[tuple[str, ast.Module]]:
    """The generate step: one Python module per `.svc` file, in load order (`compile` runs
    it; `svcc check --emit-python` shows it)."""
    return codegen.generate(checked.program)


def read_project(folder: str) -> tuple[Project | None, Failed]:
    """A project's checked svc.toml alone (what `svcc install` reads), or None and why not."""
    sources: dict[str, SourceFile] = {}
    project, diagnostics = _read_project(folder, sources)
    return project, Failed(diagnostics, sources)


def _environment_diagnostics(project: Project, sources: dict[str, SourceFile]
                             ) -> list[Diagnostic]:
    """A project with `[dependencies]` runs only with the packages svc.lock records
    (svc.dependencies.verify): else one diagnostic at the `[dependencies]` table."""
    problem = environment_problem(project.directory, project.dependencies_table)
    if problem is None:
        return []
    source = sources[os.path.normpath(config_path(project.directory))]
    line, col = table_position(source, "dependencies")
    return [Diagnostic(problem, Span(source.path, line, col, line, col + len("dependencies")))]


def _read_project(folder: str, sources: dict[str, SourceFile]) -> tuple[Project | None,
                                                                        list[Diagnostic]]:
    """Read `svc.toml` of `folder` (kept in `sources` to show its diagnostics)."""
    config, diagnostics = read_source(os.path.normpath(config_path(folder)))
    if config is not None:
        sources[config.path] = config
    if config is None or diagnostics:
        return None, diagnostics
    return load_project(folder, config)
