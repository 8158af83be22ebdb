"""The checked program: the checker's output and the code generator's input.

Plain data: the typed, annotated modules plus the tables the later passes need (classes,
functions, the route table, `main`). Names are global across the entry file and its imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from svc.compiler import syntax
from svc.compiler.source import Span
from svc.compiler.types import Type


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


@dataclass
class RouteParam:
    """How one handler parameter is bound (LANGUAGE.md §7)."""

    name: str
    source: str  # "path", "query", "body", "raw", "db"
    type: Type  # for "query"/"path": the scalar type (the inner type when optional)
    optional: bool = False


@dataclass
class RouteInfo:
    method: str  # "GET", "POST", "PUT", "DELETE"
    path: str
    function: str
    params: list[RouteParam]
    result: str  # "json", "json_optional", "html", "unit"
    span: Span


@dataclass
class CheckedProgram:
    entry: str  # the entry file's path
    modules: list[syntax.Module]  # load order, dependencies first; annotated in place
    classes: dict[str, ClassInfo] = field(default_factory=dict)  # declaration order
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    routes: list[RouteInfo] = field(default_factory=list)
    main: Optional[FunctionInfo] = None
