"""Typed row mapping, shared by every database: a row's values into an svc class's fields, or
a single column's values (`db_all[i64]`).

Columns are matched to the class's fields by name. Extra columns are ignored; when two
columns share a name, the first wins. An integer into an `f64` field is converted; a real
number into an integer field is a mismatch. An enum field takes TEXT holding one of its
members' names; a List, Map or class field takes TEXT holding JSON, decoded as strictly as
`json_decode[T]` decodes (PostgreSQL's `jsonb` and `json` arrive as text). A mapper is
planned once per (class, column names) and runs on the hot path of every query, so its common
case is generated code.
A row is anything indexable by column position: a tuple (SQLite) or an asyncpg Record, read
as it is, without copying its values out first.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import msgspec

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

#: A row (a tuple, an asyncpg Record) → an instance of its svc class, or a single column's
#: value.
RowMapper = Callable[[Any], object]

# (cls, column names) → row mapper. Bounded by the program's distinct queries.
_mappers: dict[tuple[Any, tuple[str, ...]], RowMapper] = {}


def mapper(cls: Any, names: tuple[str, ...]) -> RowMapper:
    """The row mapper of `cls` for a result with these column names (cached). `cls` is an svc
    class, or a single column's description (a tuple, below). A class that is not an svc class
    (or None) is a RowMismatch."""
    mapper = _mappers.get((cls, names))
    if mapper is None:
        mapper = _mappers[(cls, names)] = _build_mapper(cls, names)
    return mapper


# A class's `__svc_fields__` (generated code) holds one entry per field:
#
#     (name, type_name, optional)                        a scalar: i64, i32, f64, bool, str, bytes
#     (name, type_name, optional, "enum", members)       an enum: TEXT holding a member's name
#     (name, type_name, optional, "json")                a List, Map or class: TEXT holding JSON,
#                                                        decoded as the class's field type
#
# A single column (`db_all[i64]`, `db_one[Role]`) is described by a tuple of the same shape
# whose first item names the call instead of a field: ("db_all[i64]", "i64", False). Its query
# must have exactly one column, which gives each row's value.
ENUM, JSON = "enum", "json"


class _Field:
    """How one column fills one field (or the single value): checked and converted."""

    __slots__ = ("position", "name", "type_name", "optional", "target", "convert", "test",
                 "value", "helper")

    def __init__(self, position: int, entry: tuple, target: str, column: str,
                 field_type: Any) -> None:
        name, type_name, optional = entry[0], entry[1], entry[2]
        kind = entry[3] if len(entry) > 3 else None
        self.position, self.name, self.type_name = position, column, type_name
        self.optional, self.target = optional, target
        self.helper: Any = None
        self.value = "{v}"
        if kind == ENUM:
            self.helper = frozenset(entry[4])
            self.convert = self._enum_converter(entry[4])
            self.test = "type({v}) is str and {v} in {h}"
        elif kind == JSON:
            self.helper = self._json_decoder(field_type)
            self.convert = self.helper
            self.test = "type({v}) is str"
            self.value = "{h}({v})"
        else:
            convert = _CONVERTERS.get(type_name)
            if convert is None:
                raise RowMismatch(f"{target} has type {type_name}, which no column can fill")
            self.convert = convert
            self.test = _FAST_TEST[type_name]
            self.value = _FAST_VALUE.get(type_name, "{v}")

    def _enum_converter(self, members: tuple[str, ...]) -> Callable[[Any], Any]:
        known = frozenset(members)

        def convert(value):
            if type(value) is not str:
                return _BAD
            if value not in known:
                raise RowMismatch(
                    f"column '{self.name}' holds {_shown(value)}, which is no member of "
                    f"{self.type_name} ({', '.join(members)}) for {self.target}")
            return value
        return convert

    def _json_decoder(self, field_type: Any) -> Callable[[Any], Any]:
        if field_type is None:
            raise RowMismatch(f"{self.target} ({self.type_name}) is filled from JSON, but "
                              f"its class does not say the field's type")
        decode = msgspec.json.Decoder(field_type).decode

        def convert(value):
            if type(value) is not str:
                return _BAD
            try:
                return decode(value)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                raise RowMismatch(
                    f"column '{self.name}' holds {_shown(value)}, which is no "
                    f"{self.type_name} for {self.target}: {exc}") from None
        return convert

    def null_text(self) -> str:
        if self.target.startswith("field "):
            return (f"column '{self.name}' is NULL but {self.target} is {self.type_name}, "
                    f"not {self.type_name}?")
        call, _, _ = self.target.partition("[")
        return (f"column '{self.name}' is NULL but {self.target} takes no NULL "
                f"({call}[{self.type_name}?] does)")


def _build_mapper(cls: Any, names: tuple[str, ...]) -> RowMapper:
    """Plan which column feeds each field and how it is checked, once per (class, columns)."""
    if cls.__class__ is tuple:
        return _single_column(cls, names)
    class_name = getattr(cls, "__name__", repr(cls))
    fields = getattr(cls, "__svc_fields__", None)
    if cls is None or fields is None:
        raise RowMismatch(f"{class_name} is not an svc class; rows cannot map to it")
    position: dict[str, int] = {}
    for i, name in enumerate(names):
        position.setdefault(name, i)
    types = _field_types(cls) if any(len(entry) > 3 for entry in fields) else {}
    plan = []
    for entry in fields:
        name = entry[0]
        if name not in position:
            raise RowMismatch(f"query result has no column '{name}' for field {class_name}.{name}")
        plan.append(_Field(position[name], entry, f"field {class_name}.{name}", name,
                           types.get(name)))
    field_names = tuple(f[0] for f in fields)
    positional = getattr(cls, "__struct_fields__", None) == field_names

    def make(values):
        return cls(*values) if positional else cls(**dict(zip(field_names, values)))

    if positional:
        build = "cls({values})"
    else:
        build = "cls(**{{" + ", ".join(f"{name!r}: {{value{j}}}" for j, name in
                                       enumerate(field_names)) + "}})"
    return _compile_fast_path(plan, build)(cls, make, _checked(plan))


def _single_column(description: tuple, names: tuple[str, ...]) -> RowMapper:
    """The mapper of `db_all[i64]` and the like: the value of the query's only column."""
    target = description[0]
    if len(names) != 1:
        listed = f" ({', '.join(names)})" if names else ""
        raise RowMismatch(f"{target} takes the value of a query's only column, and this query "
                          f"has {len(names)} columns{listed}")
    plan = [_Field(0, description, target, names[0], None)]
    return _compile_fast_path(plan, "{value0}")(None, lambda values: values[0], _checked(plan))


def _field_types(cls: Any) -> dict[str, Any]:
    """The field types of a generated class (a msgspec Struct), by svc field name."""
    try:
        return {f.encode_name: f.type for f in msgspec.structs.fields(cls)}
    except (TypeError, NameError):  # not a Struct, or annotations that cannot be resolved
        return {}


def _checked(plan: list[_Field]) -> Callable[[Any], list]:
    """The slow path: field by field, with a message naming the first value that does not
    fit (a NULL, an INTEGER for an f64 and a NUMERIC are converted here)."""

    def checked(row):
        values = []
        for field in plan:
            value = row[field.position]
            if value is None:
                if not field.optional:
                    raise RowMismatch(field.null_text())
                values.append(None)
                continue
            if type(value) is Decimal:  # PostgreSQL's NUMERIC (a SUM of integers, say)
                value = _from_decimal(value)
            converted = field.convert(value)
            if converted is _BAD:
                raise RowMismatch(_mismatch_text(field, value))
            values.append(converted)
        return values

    return checked


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


def _compile_fast_path(plan: list[_Field], build: str):
    """Generate straight-line code for the common row: every value already fits its field.

    A row mapper runs once per row on the database thread, on the hot path of every query;
    generated code (as `dataclasses` and `namedtuple` do) is several times faster than a
    loop over the fields. Any other row (a NULL, an INTEGER for an f64, a mismatch) falls
    back to `checked`, which converts or names the problem. An enum's members and a JSON
    field's decoder are the helpers `h0`, `h1`, ... of the generated code.
    """
    names = [f"v{j}" for j in range(len(plan))]
    helpers = {f"h{j}": field.helper for j, field in enumerate(plan) if field.helper is not None}
    load = "; ".join(f"{v} = row[{field.position}]" for v, field in zip(names, plan))
    test = " and ".join(field.test.format(v=v, h=f"h{j}")
                        for j, (v, field) in enumerate(zip(names, plan)))
    values = [field.value.format(v=v, h=f"h{j}") for j, (v, field) in enumerate(zip(names, plan))]
    built = build.format(values=", ".join(values),
                         **{f"value{j}": value for j, value in enumerate(values)})
    source = (f"def outer(cls, make, checked):\n"
              f"    def map_row(row):\n"
              f"        {load}\n"
              f"        if {test}:\n"
              f"            return {built}\n"
              f"        return make(checked(row))\n"
              f"    return map_row\n")
    namespace: dict = dict(helpers)
    exec(source, namespace)  # noqa: S102 - built only from field types and column positions
    return namespace["outer"]


def _shown(value) -> str:
    shown = repr(value)
    return shown[:40] + "..." if len(shown) > 40 else shown


def _mismatch_text(field: _Field, value) -> str:
    sql_type = _SQL_TYPE.get(type(value), type(value).__name__)
    type_name = field.type_name
    why = "outside the i32 range" if type_name == "i32" and type(value) is int else \
        "not 0 or 1" if type_name == "bool" and type(value) is int else "does not fit"
    which = f"{field.target} ({type_name})" if field.target.startswith("field ") else field.target
    return f"column '{field.name}' holds {sql_type} value {_shown(value)}, {why} for {which}"
