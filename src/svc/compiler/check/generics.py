"""Generic classes: `class Page[T]:` and its uses `Page[Task]`.

Each instantiation is a class of its own, named as the user writes it (`Page[Task]`): its
`ClassInfo` sits in `program.classes` under that name with the generic class's fields, T
replaced, and its type is `ClassRef("Page[Task]")`. So everything that works on a class
(fields, construction, JSON binding, row mapping, OpenAPI, the editor) works on an
instantiation unchanged, and the code generator gives each instantiation a Struct of its own,
whose field types are exact (strict JSON binding stays strict). The generic class itself is
checked once with each T standing for any type (`TypeParam`), and kept in
`program.generic_classes` (for editors).

A type argument may be any type a class field may hold. An instantiation's own problems (a
`Map[str, T]` field with T optional, say) are reported where it is used.

The functions take the checker as a `Resolver` (what they use of it), so this module does not
import checker.py.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Protocol

from svc.compiler.builtin_table import TYPE_NAMES
from svc.compiler.check import http_types as check_http, maps
from svc.compiler.check.context import CheckContext
from svc.compiler.front import syntax
from svc.compiler.program import ClassInfo
from svc.compiler.source import Span
from svc.compiler.svctypes import (
    UNKNOWN, ClassRef, ListOf, MapOf, Opt, Type, TypeParam, contains_tx,
    contains_view, format_type,
)

#: How deeply instantiations may nest (`A[List[List[...]]]`): a class whose fields
#: instantiate itself with an ever larger type would otherwise never end.
MAX_NESTING = 8
_INVALID = " is not a valid type: "


class Resolver(Protocol):
    """What this module uses of the program-level checker."""

    ctx: CheckContext
    type_env: dict[str, Type]  # the type parameters in scope: name -> what they stand for

    def resolve_type(self, texpr: syntax.TypeExpr, file: str) -> Type: ...

    def resolve_class(self, decl: syntax.ClassDef, file: str) -> ClassInfo: ...


def is_generic(decl: object) -> bool:
    return isinstance(decl, syntax.ClassDef) and bool(decl.type_params)


@contextmanager
def type_env(r: Resolver, env: dict[str, Type]) -> Iterator[None]:
    """Resolve written types with `env`'s type parameters (and no others) in scope."""
    saved = r.type_env
    r.type_env = env
    try:
        yield
    finally:
        r.type_env = saved


def resolve_named(r: Resolver, texpr: syntax.NamedType, file: str) -> Type | None:
    """A written type that names a type parameter, `Map` or a generic class; None for any
    other name (the checker resolves it)."""
    name = texpr.name
    if name in r.type_env:
        if texpr.args:
            r.ctx.error(f"type parameter '{name}' takes no type arguments", texpr.span)
            return UNKNOWN
        return r.type_env[name]
    if name == maps.MAP:
        return maps.resolve_map(r.ctx, r.resolve_type, texpr, file)
    d = r.ctx.lookup(name, file)
    if d is None or not isinstance(d.decl, syntax.ClassDef) or not is_generic(d.decl):
        return None
    decl = d.decl
    r.ctx.refer(_name_part(texpr.span, name), decl.name_span)
    if not texpr.args:
        r.ctx.error(f"class {name} is generic: write {usage(decl)}", texpr.span)
        return UNKNOWN
    args = [r.resolve_type(a, file) for a in texpr.args]
    return instantiate(r, decl, d.file, args, [a.span for a in texpr.args], texpr.span)


def usage(decl: syntax.ClassDef) -> str:
    """`Page[T]`, as a message shows how to write the class's type."""
    return f"{decl.name}[{', '.join(p.name for p in decl.type_params)}]"


def instantiate(r: Resolver, decl: syntax.ClassDef, decl_file: str, args: list[Type],
                arg_spans: list[Span], span: Span) -> Type:
    """The class `Decl[args]`, made (once per program) when first used; UNKNOWN after an
    error, which is reported at `span` (the use)."""
    count = len(decl.type_params)
    if len(args) != count:
        plural = "argument" if count == 1 else "arguments"
        r.ctx.error(f"class {decl.name} takes {count} type {plural} ({usage(decl)}), found "
                    f"{len(args)}", span)
        return UNKNOWN
    if UNKNOWN in args:
        return UNKNOWN
    for t, at in zip(args, arg_spans):
        problem = argument_problem(t)
        if problem is not None:
            r.ctx.error(f"type argument of {decl.name}: {problem}", at)
            return UNKNOWN
    name = f"{decl.name}[{', '.join(format_type(t) for t in args)}]"
    if any(_has_type_param(t, r.ctx.program.classes) for t in args):
        return ClassRef(name)  # inside a generic class's own fields: checked per use
    program = r.ctx.program
    if name in program.classes:
        return ClassRef(name)
    if name.count("[") > MAX_NESTING:
        r.ctx.error(f"generic classes nest too deeply here ({name[:60]}...): at most "
                    f"{MAX_NESTING} levels", span)
        return UNKNOWN
    template = check_template(r, decl, decl_file)
    info = ClassInfo(name, [], decl, decl_file)
    program.classes[name] = info  # before its fields: a field may refer to the class itself
    mark = len(r.ctx.diagnostics)
    with type_env(r, {p.name: t for p, t in zip(decl.type_params, args)}):
        info.fields = r.resolve_class(decl, decl_file).fields
    # The generic class's own mistakes were reported once, by its own check; what is new
    # here comes from the type arguments, and is reported at this use.
    found = r.ctx.diagnostics[mark:]
    del r.ctx.diagnostics[mark:]
    for (field, t), (_, generic_t) in zip(info.fields, template.fields):
        if t == UNKNOWN and generic_t != UNKNOWN:
            reason = next((d.message for d in found if d.span.line == _field_line(decl, field)),
                          "its fields are invalid")
            innermost = reason.rpartition(_INVALID)[2]  # not one clause per nested level
            r.ctx.error(f"{name}{_INVALID}{innermost}", span)
            return UNKNOWN
    return ClassRef(name)


def check_template(r: Resolver, decl: syntax.ClassDef, file: str) -> ClassInfo:
    """The generic class itself, checked once: its type parameters, and its fields with each
    parameter standing for any type."""
    program = r.ctx.program
    known = program.generic_classes.get(decl.name)
    if known is not None:
        return known
    info = ClassInfo(decl.name, [], decl, file)
    program.generic_classes[decl.name] = info  # a field that uses another generic class
    env: dict[str, Type] = {}                   # may lead back here
    for p in decl.type_params:
        if p.name in env:
            r.ctx.error(f"type parameter '{p.name}' is declared twice in class {decl.name}",
                        p.span)
        elif p.name in TYPE_NAMES:
            r.ctx.error(f"'{p.name}' is a built-in type and cannot be a type parameter",
                        p.span)
        env[p.name] = TypeParam(p.name)
    with type_env(r, env):
        info.fields = r.resolve_class(decl, file).fields
    return info


def argument_problem(t: Type) -> str | None:
    """Why `t` cannot be a type argument of a generic class (anything a field may hold)."""
    if contains_view(t):
        return "a view cannot be stored in a class field (use bytes)"
    if contains_tx(t):
        return "a Tx cannot be stored in a class field (a transaction lives in one request)"
    return check_http.field_problem(t)


def _has_type_param(t: Type, classes: dict[str, ClassInfo]) -> bool:
    """Whether `t` mentions a type parameter: a `TypeParam`, or an instantiation made with
    one (those are never registered, see `instantiate`)."""
    if isinstance(t, TypeParam):
        return True
    if isinstance(t, ListOf):
        return _has_type_param(t.elem, classes)
    if isinstance(t, Opt):
        return _has_type_param(t.inner, classes)
    if isinstance(t, MapOf):
        return _has_type_param(t.value, classes)
    return isinstance(t, ClassRef) and "[" in t.name and t.name not in classes


def _field_line(decl: syntax.ClassDef, field: str) -> int:
    return next(f.span.line for f in decl.fields if f.name == field)


def _name_part(span: Span, name: str) -> Span:
    """The class name at the start of a written type (`Page` of `Page[Task]`)."""
    return Span(span.file, span.line, span.col, span.line, span.col + len(name))
