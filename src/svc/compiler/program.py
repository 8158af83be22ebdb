"""The checked program: the checker's output and the code generator's input.

Plain data: the typed, annotated modules plus the tables the later passes need (classes,
functions, the route table, `main`). Names are global across the entry file and its imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from svc.compiler.front import syntax
from svc.compiler.source import Span
from svc.compiler.svctypes import Type
from svc.contract import Route


@dataclass
class ClassInfo:
    name: str
    fields: list[tuple[str, Type]]  # declaration order
    decl: syntax.ClassDef
    file: str


@dataclass
class FunctionInfo:
    name: str
    params: list[tuple[str, Type]]
    returns: Type  # UNIT when `-> R` is omitted
    is_async: bool
    decl: syntax.FunctionDef
    file: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteInfo(Route):
    """A route of the program: the contract's `Route` as the checker builds it, with `handler`
    the svc function's name and each `Param.type` the checked svc type (the inner type of a
    `T?` query parameter), plus where the route attribute's path is written."""

    span: Span


@dataclass
class CheckedProgram:
    entry: str  # the entry file's path
    modules: list[syntax.Module]  # load order, dependencies first; annotated in place
    classes: dict[str, ClassInfo] = field(default_factory=dict)  # declaration order
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    routes: list[RouteInfo] = field(default_factory=list)
    main: Optional[FunctionInfo] = None
    # For editors: each name use's span -> the span of the name it refers to (a local,
    # parameter, function, class, field or imported name), recorded by the checker as it
    # resolves names; and the files `include_text` read (what `svcc run --watch` watches).
    references: dict[Span, Span] = field(default_factory=dict)
    included_files: list[str] = field(default_factory=list)
