"""The rules of Python functions: `@python("module", "function")` above a bodiless
`async def` (docs/reference/language.md, "Python functions").

Runs on resolved declarations (FunctionInfo), before function bodies are checked. A Python
function's signature is a promise the runtime holds Python to (svc.runtime.lib.python_calls
converts and checks every value strictly), so only types with one plain Python value each may
cross: numbers, text, bytes, bool, enums, classes made of those, `T?`, `List[T]`,
`Map[str, T]`. What the declaration names is imported now, from the project's own packages
first, so a missing module or function is a diagnostic at its string, not a fault at start.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import keyword
import sys
from types import ModuleType
from typing import Callable

from svc.compiler.builtin_table import BUILTINS
from svc.compiler.check.context import CheckContext, suggest
from svc.compiler.front import syntax
from svc.compiler.program import FunctionInfo
from svc.compiler.svctypes import (
    BOOL, BYTES, F64, I64, STR, UNIT, UNKNOWN, ClassRef, EnumRef, ListOf, MapOf, Opt, ResultOf,
    Type, format_type,
)

#: The kinds of error an exception may become: those the error builtins and the builtins'
#: own failures make (a client sees each one's status).
ERROR_KINDS = tuple(sorted(frozenset().union(*(b.errors for b in BUILTINS.values()))))
DEFAULT_ERROR_KIND = "internal"
BOUNDARY_TEXT = ("i64, f64, str, bool, bytes, an enum, a class of those, T?, List[T] or "
                 "Map[str, T]")
_SCALARS = (I64, F64, STR, BOOL, BYTES)

#: (import path, module) → the module, or the one-line reason it could not be imported; one
#: process imports each module once (a language server checks on every keystroke).
_imports: dict[tuple[tuple[str, ...], str], ModuleType | str] = {}


def check_python_functions(ctx: CheckContext, python_path: tuple[str, ...]) -> None:
    """Every rule of every `@python` declaration, each reported where it is written."""
    for info in ctx.program.functions.values():
        if info.decl.python is not None:
            _check_declaration(ctx, info, info.decl.python, python_path)


def _check_declaration(ctx: CheckContext, info: FunctionInfo, attr: syntax.PythonAttr,
                       python_path: tuple[str, ...]) -> None:
    decl = info.decl
    if not info.is_async:
        ctx.error(f"a @python function is an 'async def' (its call is awaited): write "
                  f"'async def {info.name}(...)'", decl.name_span)
    others = [a.span for a in (*decl.routes, *decl.background, *decl.guards)]
    if others:
        ctx.error(f"'{info.name}' is a Python function: it cannot also be a route handler, a "
                  "job, a schedule or guarded (call it from one)", min(others, key=_place))
    _check_types(ctx, info)
    if attr.error is not None and attr.error not in ERROR_KINDS:
        ctx.error(f"unknown error kind '{attr.error}' for a Python exception (one of "
                  f"{', '.join(ERROR_KINDS)}){suggest(attr.error, list(ERROR_KINDS))}",
                  attr.error_span or attr.span)
    if _names_ok(ctx, attr):
        _check_import(ctx, attr, python_path)


def _place(span) -> tuple[int, int]:
    return (span.line, span.col)


def _check_types(ctx: CheckContext, info: FunctionInfo) -> None:
    """Parameters and the Ok value: boundary types; the return: `Result[T, Error]`."""
    fits = _boundary(ctx.field_types)
    for param, (name, t) in zip(info.decl.params, info.params):
        if not fits(t):
            ctx.error(f"parameter '{name}' of Python function '{info.name}': "
                      f"{format_type(t)} cannot cross to Python (it may be {BOUNDARY_TEXT})",
                      param.annotation.span)
    where = info.decl.returns.span if info.decl.returns is not None else info.decl.name_span
    returns = info.returns
    if returns == UNKNOWN:
        return
    if not isinstance(returns, ResultOf):
        ctx.error(f"a Python function returns Result[T, Error] (an exception is its Err), "
                  f"found {format_type(returns)}", where)
    elif returns.ok != UNIT and not fits(returns.ok):
        ctx.error(f"the result of Python function '{info.name}': {format_type(returns.ok)} "
                  f"cannot cross from Python (it may be unit, {BOUNDARY_TEXT})", where)


def _boundary(class_fields: Callable[[str], list[Type]]) -> Callable[[Type], bool]:
    """Whether values of a type convert to plain Python values and back, one way each."""
    def fits(t: Type, seen: frozenset[str] = frozenset()) -> bool:
        if t in _SCALARS or t == UNKNOWN or isinstance(t, EnumRef):
            return True
        if isinstance(t, (ListOf, MapOf, Opt)):
            inner = t.elem if isinstance(t, ListOf) else t.value if isinstance(t, MapOf) \
                else t.inner
            return fits(inner, seen)
        if isinstance(t, ClassRef):
            return t.name in seen or all(fits(f, seen | {t.name}) for f in class_fields(t.name))
        return False
    return fits


def _names_ok(ctx: CheckContext, attr: syntax.PythonAttr) -> bool:
    """A module is dotted names (`os.path`); a function, one name of it."""
    if not _dotted(attr.module):
        ctx.error(f"'{attr.module}' is not a Python module's name (such as \"markdown\" or "
                  "\"os.path\")", attr.module_span)
        return False
    if "." in attr.attribute:
        ctx.error(f"'{attr.attribute}' is not a plain name: @python names a function of the "
                  "module itself (not a class's method: wrap it in a module-level function)",
                  attr.attribute_span)
        return False
    if not _dotted(attr.attribute):
        ctx.error(f"'{attr.attribute}' is not a Python name", attr.attribute_span)
        return False
    return True


def _dotted(text: str) -> bool:
    parts = text.split(".")
    return all(p.isidentifier() and not keyword.iskeyword(p) for p in parts)


def _check_import(ctx: CheckContext, attr: syntax.PythonAttr,
                  python_path: tuple[str, ...]) -> None:
    found = import_module(attr.module, python_path)
    if isinstance(found, str):
        ctx.error(found, attr.module_span)
        return
    if not hasattr(found, attr.attribute):
        ctx.error(f"Python module '{attr.module}' has no '{attr.attribute}'",
                  attr.attribute_span)
    elif not callable(getattr(found, attr.attribute)):
        ctx.error(f"'{attr.module}.{attr.attribute}' is not callable", attr.attribute_span)
    else:
        attr.is_coroutine = inspect.iscoroutinefunction(getattr(found, attr.attribute))


def import_module(name: str, python_path: tuple[str, ...]) -> ModuleType | str:
    """The module `name`, imported with `python_path` in front of the import path (restored
    after), or why not in one line; once per process for each (path, module)."""
    key = (python_path, name)
    if key not in _imports:
        _imports[key] = _import(name, python_path)
    return _imports[key]


def _import(name: str, python_path: tuple[str, ...]) -> ModuleType | str:
    saved = list(sys.path)
    sys.path[:0] = python_path
    try:
        # A module's import-time prints must not reach standard output: a language server
        # talks to its editor there.
        with contextlib.redirect_stdout(sys.stderr):
            return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            return (f"no Python module '{name}' (list it in svc.toml [dependencies] and run "
                    "`svcc install`)")
        return _failed(name, exc)
    except (Exception, SystemExit) as exc:  # an import that raises: its own error, one line
        return _failed(name, exc)
    finally:
        sys.path[:] = saved


def _failed(name: str, exc: BaseException) -> str:
    text = str(exc).strip()
    reason = f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
    return f"importing Python module '{name}' failed: {reason}"
