"""The types that cross into a database: the arguments of `db_exec`, `db_all` and `db_one`, and
what `db_all[T]` and `db_one[T]` read (docs/reference/builtins.md, "Database").

- An argument is a scalar (i64, i32, f64, bool, str, bytes, view[bytes]), an enum (its
  member's name, as text), a List, `Map[str, T]` or class that JSON can carry (JSON text; a
  List of scalars or of an enum stands for its values in `col IN (?n)`), a `T?` of those, or
  `None` (NULL).
- `T` of `db_all[T]`/`db_one[T]` is a class whose fields are any of those but view[bytes]
  (columns fill them by name), or a scalar or an enum (or `T?` of one, in `db_all`): the
  value of the query's only column.

Everything else (Db, Tx, Headers, Response, Html, Error, unit, a class holding bytes, ...)
is a diagnostic here; the generated code and the runtime (svc.runtime.db) rely on it.
"""

from __future__ import annotations

from typing import Callable

from svc.compiler.svctypes import (
    BYTES, NONE, UNKNOWN, ClassRef, ListOf, MapOf, Opt, Type, View, db_kind, format_type,
    is_json_type,
)

#: The fields of a class by name, for `is_json_type` (the checker's `ctx.field_types`).
ClassFields = Callable[[str], list[Type]]

#: How a message names the types a field of a row class may have.
FIELD_RULE = ("needs a class whose fields are scalars, enums, a List, Map[str, T] or class "
              "that JSON can carry, or T? of those")


def value_fits(t: Type, class_fields: ClassFields) -> bool:
    """Whether values of `t` go to a database and come back (an argument, a row's field)."""
    inner = t.inner if isinstance(t, Opt) else t
    kind = db_kind(inner)
    if kind == "json":
        return is_json_type(inner, class_fields)
    return kind is not None


def argument_fits(t: Type, class_fields: ClassFields) -> bool:
    """Whether `t` may be an argument of db_exec, db_all or db_one."""
    return t == NONE or t == View(BYTES) or value_fits(t, class_fields)


def argument_hint(t: Type, classes: dict) -> str:
    """Why a List, Map or class argument is refused, to add to the "expected ..., found ..."
    message: " (JSON cannot carry bytes)", " (JSON cannot carry Doc.hash: bytes)"; "" for
    any other type."""
    inner = t.inner if isinstance(t, Opt) else t
    if not isinstance(inner, (ListOf, MapOf, ClassRef)):
        return ""
    why = _not_json(inner, classes, frozenset())
    return f" (JSON cannot carry {why})" if why else ""


def _not_json(t: Type, classes: dict, seen: frozenset[str]) -> str:
    """The part of `t` that JSON cannot carry, in words, or ""."""
    t = t.inner if isinstance(t, Opt) else t
    if isinstance(t, ListOf):
        return _not_json(t.elem, classes, seen)
    if isinstance(t, MapOf):
        return _not_json(t.value, classes, seen)
    if isinstance(t, ClassRef):
        info = classes.get(t.name)
        if info is None or t.name in seen:
            return ""
        for name, ft in info.fields:
            why = _not_json(ft, classes, seen | {t.name})
            if why:  # a class's own field, or where its class (in a List, ...) goes wrong
                return why if isinstance(_held_base(ft), ClassRef) else \
                    f"{t.name}.{name}: {format_type(ft)}"
        return ""
    if is_json_type(t, lambda name: []):
        return ""
    return format_type(t)


def _held_base(t: Type) -> Type:
    """The type a `T?`, List or Map holds at its bottom (`List[Doc]?` → Doc)."""
    while isinstance(t, (Opt, ListOf, MapOf)):
        t = t.inner if isinstance(t, Opt) else t.elem if isinstance(t, ListOf) else t.value
    return t


def row_type_problem(builtin: str, t: Type, classes: dict, class_fields: ClassFields) -> str | None:
    """The diagnostic for `T` of `db_all[T]` or `db_one[T]`, or None when `T` may be read."""
    if isinstance(t, ClassRef):
        for name, ft in classes[t.name].fields:
            if ft != UNKNOWN and not value_fits(ft, class_fields):
                return f"{builtin}[T] {FIELD_RULE}; field '{name}' of {t.name} is {format_type(ft)}"
        return None
    inner = t.inner if isinstance(t, Opt) else t
    if db_kind(inner) not in (None, "json"):
        if isinstance(t, Opt) and builtin == "db_one":
            return (f"{builtin}[{format_type(t)}] would give {format_type(t)}?, which is no "
                    f"type: {builtin}[{format_type(inner)}] gives None both when there is no "
                    f"row and when its column is NULL")
        return None
    return (f"{builtin}[T] needs a class (the query's columns fill its fields by name), or a "
            f"scalar, an enum or T? of those (the value of the query's only column); found "
            f"{format_type(t)}")
