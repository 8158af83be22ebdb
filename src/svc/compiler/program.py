"""The checked program: the checker's output and the code generator's input.

Plain data: the typed, annotated modules plus the tables the later passes need (classes,
functions, the route table, `main`). Names are global across the entry file and its imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from svc.compiler.front import syntax
from svc.compiler.source import Span
from svc.compiler.sql.schema import MigrationFile
from svc.compiler.svctypes import Type
from svc.rules.contract import BODY_LIMIT, STREAM_SOURCES, ParamSource, ResultKind
from svc.rules.settings import Settings


@dataclass
class ClassInfo:
    name: str
    fields: list[tuple[str, Type]]  # declaration order
    decl: syntax.ClassDef
    file: str


@dataclass
class ConstInfo:
    """A module-level constant: its declared type and its checked (literal-built) value."""

    name: str
    type: Type
    decl: syntax.ConstDef
    file: str


@dataclass(frozen=True)
class TopicInfo:
    """A topic the program declares (`NAME: Topic[T] = topic("name")`): its name, the type of
    its messages and the constant that declares it."""

    name: str
    message: Type
    constant: str
    span: Span


@dataclass
class FunctionInfo:
    name: str
    params: list[tuple[str, Type]]
    returns: Type  # UNIT when `-> R` is omitted
    is_async: bool
    decl: syntax.FunctionDef
    file: str


@dataclass(frozen=True, slots=True)
class ParamInfo:
    """One handler parameter of a route: its name, where its value comes from, and its checked
    svc type (the inner type of a `T?` query parameter, `optional` then True)."""

    name: str
    source: ParamSource
    type: Type
    optional: bool = False


@dataclass(frozen=True, slots=True)
class GuardUse:
    """One guard a route runs (check/guards.py): the svc function, its Ok value's type (a
    class, or unit), where its arguments come from, and where it is attached: `prefix` is the
    `guard("/prefix", ...)` declaration's prefix (and its `methods`), None for `@guard(...)` on
    the handler.

    Each argument is a request parameter's name (the route's Headers or Db parameter) or the
    index, in `RouteInfo.guards`, of the earlier guard whose value it takes."""

    guard: str
    value: Type
    args: tuple[str | int, ...]
    is_async: bool
    prefix: Optional[str]
    span: Span
    #: the prefix's `methods=[...]`: the methods it guards (() for every method)
    methods: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RouteInfo:
    """A route of the program as the checker builds it: the method and path of a route
    attribute, the svc function that handles it, how each parameter binds, how the result is
    answered, whether the result can hold an f64 (inf and NaN are faults), and where the
    attribute's path is written. Code generation turns it into the runtime's `svc.rules.contract.Route`
    (codegen/route_table.py)."""

    method: str
    path: str
    handler: str  # the svc function's name
    params: tuple[ParamInfo, ...]
    result: ResultKind
    floats: bool
    span: Span
    # The guards it runs, in order, before the handler (check/guards.py). With guards,
    # `params` are what the request gives (the handler's, then a Headers or Db only the
    # guards take) and `handler_args` says, per handler parameter, where its value comes
    # from: a name of `params`, or the index of the guard whose Ok value it takes.
    guards: tuple[GuardUse, ...] = ()
    handler_args: tuple[str | int, ...] = ()
    # Whether the runtime runs it again when its transaction clashes with another one: the
    # effects pass proved that nothing but that transaction would be repeated (effects/);
    # else, for a route that begins a transaction, what a run again would repeat.
    retried: bool = False
    not_retried_because: str = ""
    # The most bytes its body may have (`body_limit="10 MiB"`, else the server's 1 MiB).
    body_limit: int = BODY_LIMIT

    @property
    def stream(self) -> ParamInfo | None:
        """Its `Events[T]` or `WebSocket[In, Out]` parameter, when it answers with a stream."""
        return next((p for p in self.params if p.source in STREAM_SOURCES), None)


@dataclass(frozen=True, slots=True)
class JobInfo:
    """A `@job("name")` handler as the checker builds it (check/background.py): the job's name,
    the svc function, its payload's type and the attribute's options, durations in ms."""

    name: str
    handler: str
    payload: Type
    attempts: int
    backoff_ms: int
    deadline_ms: int
    span: Span


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """An `@every("5m")` or `@cron("0 3 * * *")` function (check/background.py)."""

    handler: str
    every_ms: int  # 0 for @cron
    cron: str  # "" for @every
    deadline_ms: int
    span: Span


@dataclass
class CheckedProgram:
    entry: str  # the entry file's path
    modules: list[syntax.Module]  # load order, dependencies first; annotated in place
    # the program's folder (the project's, else the entry file's): what include_text may read
    root: str = "."
    classes: dict[str, ClassInfo] = field(default_factory=dict)  # declaration order
    # The generic classes as declared (fields typed with their TypeParams), for editors; each
    # use `Page[Task]` is a class of `classes` of its own (check/generics.py)
    generic_classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    constants: dict[str, ConstInfo] = field(default_factory=dict)  # declaration order
    topics: dict[str, TopicInfo] = field(default_factory=dict)  # by topic name
    enums: dict[str, syntax.EnumDef] = field(default_factory=dict)  # declaration order
    routes: list[RouteInfo] = field(default_factory=list)
    jobs: dict[str, JobInfo] = field(default_factory=dict)  # by job name
    schedules: list[ScheduleInfo] = field(default_factory=list)
    main: Optional[FunctionInfo] = None
    # For editors: each name use's span -> the span of the name it refers to (a local,
    # parameter, function, class, field or imported name), recorded by the checker as it
    # resolves names; and the files `include_text` read (what `svcc run --watch` watches).
    references: dict[Span, Span] = field(default_factory=dict)
    included_files: list[str] = field(default_factory=list)
    # The classes `config[T]()` reads, by name, in order of first use (check/config_class.py),
    config_classes: dict[str, None] = field(default_factory=dict)
    # svc.toml's tables (the defaults without svc.toml): svc.pipeline sets them, code
    # generation emits them once for serve, test_request, run_jobs and the runner.
    settings: Settings = field(default_factory=Settings)
    # svc.toml's `[migrations]`, read: each declared dialect's steps, in order (svc.pipeline
    # sets them; code generation embeds their texts for `db_migrate(db)`; the SQL checker
    # builds its schemas from them). Empty: the program declares none.
    migrations: dict[str, list[MigrationFile]] = field(default_factory=dict)
