"""Typed row mapping, shared by every database: a row's values into an svc class's fields.

Columns are matched to the class's fields by name. Extra columns are ignored; when two
columns share a name, the first wins. An integer into an `f64` field is converted; a real
number into an integer field is a mismatch. A mapper is planned once per (class, column
names) and runs on the hot path of every query, so its common case is generated code.
A row is anything indexable by column position: a tuple (SQLite) or an asyncpg Record, read
as it is, without copying its values out first.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from svc.rules.contract import I32_MAX, I32_MIN


class RowMismatch(Exception):
    """A row that does not fit its class: reported as a `database` error naming the column."""


_SQL_TYPE = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB", type(None): "NULL",
             bool: "BOOLEAN"}
_BAD = object()


def _to_i64(v):
    return v if type(v) is int else _BAD


def _to_i32(v):
    return v if type(v) is int and I32_MIN <= v <= I32_MAX else _BAD


def _to_f64(v):
    t = type(v)
    return v if t is float else float(v) if t is int else _BAD


def _to_bool(v):
    if type(v) is bool:  # PostgreSQL's boolean
        return v
    return (v == 1) if type(v) is int and (v == 0 or v == 1) else _BAD


def _to_str(v):
    return v if type(v) is str else _BAD


def _to_bytes(v):
    return v if type(v) is bytes else _BAD


def _from_decimal(value: Decimal):
    """NUMERIC as int or float, so it maps as SQLite's INTEGER or REAL would."""
    if value.is_finite() and value == value.to_integral_value():
        return int(value)
    return float(value)


_CONVERTERS = {"i64": _to_i64, "i32": _to_i32, "f64": _to_f64, "bool": _to_bool,
               "str": _to_str, "bytes": _to_bytes}

#: A row (a tuple, an asyncpg Record) → an instance of its svc class.
RowMapper = Callable[[Any], object]

# (cls, column names) → row mapper. Bounded by the program's distinct queries.
_mappers: dict[tuple[type | None, tuple[str, ...]], RowMapper] = {}


def mapper(cls: type | None, names: tuple[str, ...]) -> RowMapper:
    """The row mapper of `cls` for a result with these column names (cached). A class that
    is not an svc class (or None) is a RowMismatch."""
    mapper = _mappers.get((cls, names))
    if mapper is None:
        mapper = _mappers[(cls, names)] = _build_mapper(cls, names)
    return mapper


def _build_mapper(cls: type | None, names: tuple[str, ...]) -> RowMapper:
    """Plan which column feeds each field and how it is checked, once per (class, columns)."""
    class_name = getattr(cls, "__name__", repr(cls))
    fields = getattr(cls, "__svc_fields__", None)
    if cls is None or fields is None:
        raise RowMismatch(f"{class_name} is not an svc class; rows cannot map to it")
    position: dict[str, int] = {}
    for i, name in enumerate(names):
        position.setdefault(name, i)
    plan = []
    for name, type_name, optional in fields:
        if name not in position:
            raise RowMismatch(f"query result has no column '{name}' for field {class_name}.{name}")
        convert = _CONVERTERS.get(type_name)
        if convert is None:
            raise RowMismatch(
                f"field {class_name}.{name} has type {type_name}, which no column can fill")
        plan.append((position[name], convert, optional, name, type_name))
    field_names = tuple(f[0] for f in fields)
    positional = getattr(cls, "__struct_fields__", None) == field_names

    def make(values):
        return cls(*values) if positional else cls(**dict(zip(field_names, values)))

    def checked(row):
        """Field by field, with a message naming the first value that does not fit."""
        values = []
        for i, convert, optional, name, type_name in plan:
            value = row[i]
            if value is None:
                if not optional:
                    raise RowMismatch(f"column '{name}' is NULL but field {class_name}.{name} "
                                      f"is {type_name}, not {type_name}?")
                values.append(None)
                continue
            if type(value) is Decimal:  # PostgreSQL's NUMERIC (a SUM of integers, say)
                value = _from_decimal(value)
            converted = convert(value)
            if converted is _BAD:
                raise RowMismatch(_mismatch_text(name, class_name, type_name, value))
            values.append(converted)
        return values

    return _compile_fast_path(plan, positional)(cls, make, checked)


#: How the fast path tests a value of each field type, and how it passes the value on.
_FAST_TEST = {
    "i64": "type({v}) is int",
    "i32": f"type({{v}}) is int and {I32_MIN} <= {{v}} <= {I32_MAX}",
    "f64": "type({v}) is float",
    "bool": "({v} is True or {v} is False or type({v}) is int and ({v} == 0 or {v} == 1))",
    "str": "type({v}) is str",
    "bytes": "type({v}) is bytes",
}
_FAST_VALUE = {"bool": "{v} == 1"}


def _compile_fast_path(plan: list, positional: bool):
    """Generate straight-line code for the common row: every value already fits its field.

    A row mapper runs once per row on the database thread, on the hot path of every query;
    generated code (as `dataclasses` and `namedtuple` do) is several times faster than a
    loop over the fields. Any other row (a NULL, an INTEGER for an f64, a mismatch) falls
    back to `checked`, which converts or names the problem.
    """
    names = [f"v{j}" for j in range(len(plan))]
    load = "; ".join(f"{v} = row[{step[0]}]" for v, step in zip(names, plan))
    test = " and ".join(_FAST_TEST[step[4]].format(v=v) for v, step in zip(names, plan))
    values = [_FAST_VALUE.get(step[4], "{v}").format(v=v) for v, step in zip(names, plan)]
    if positional:
        build = f"cls({', '.join(values)})"
    else:
        build = "cls(**{" + ", ".join(f"{step[3]!r}: {value}" for step, value in
                                      zip(plan, values)) + "})"
    source = (f"def outer(cls, make, checked):\n"
              f"    def map_row(row):\n"
              f"        {load}\n"
              f"        if {test}:\n"
              f"            return {build}\n"
              f"        return make(checked(row))\n"
              f"    return map_row\n")
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102 - built only from field types and column positions
    return namespace["outer"]


def _mismatch_text(column: str, class_name: str, type_name: str, value) -> str:
    sql_type = _SQL_TYPE.get(type(value), type(value).__name__)
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:40] + "..."
    why = "outside the i32 range" if type_name == "i32" and type(value) is int else \
        "not 0 or 1" if type_name == "bool" and type(value) is int else "does not fit"
    return (f"column '{column}' holds {sql_type} value {shown}, {why} for field "
            f"{class_name}.{column} ({type_name})")
