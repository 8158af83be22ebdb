"""The arguments of `db_exec`, `db_all` and `db_one`, looked at before they reach a database,
so that one program behaves alike on SQLite and PostgreSQL.

- **NUL.** PostgreSQL's text cannot hold the character U+0000 (asyncpg's error, a 500), while
  SQLite stores it. svc has one rule for both: a `str` argument holding a NUL, or a List
  argument holding such a `str`, is refused with an `invalid` error (400) naming the argument,
  before anything is sent. So nothing is written, and a transaction stays usable.
- **Views.** A `view[bytes]` argument is copied into bytes: its buffer may be reused once
  its request ends, and an SQLite job may run later.
- **Lists.** A `List[i64]`, `List[i32]`, `List[f64]`, `List[bool]` or `List[str]` argument
  stands for its values in `col IN (?n)` (sql_text.py writes the placeholder for each
  database). Generated code wraps it in the class of its element type (`IntList`, ...): a
  tuple, so the values are those of the moment of the call, and a type that names the
  PostgreSQL array type even for an empty list (whose values could not tell).

`usual(args)` is the hot path: one look at each argument's class, and a search for NUL in
each `str`, for calls with no NUL, view or List. (It replaced the backends' own search for
views, which cost about as much: measured in bench/measurements/database.md.)
"""

from __future__ import annotations

import json
import math

from svc.rules.sql_params import LIST_ELEMENT_CASTS
from svc.runtime.db.errors import shorten
from svc.runtime.lib.support import SvcError


class SqlList(tuple):
    """A List argument: its values, and the PostgreSQL array type they are sent as."""

    __slots__ = ()
    postgres_type = ""

    def json(self) -> str:
        """The values as a JSON array, for SQLite's `json_each`."""
        return json.dumps(self, ensure_ascii=False, separators=(",", ":"))


class IntList(SqlList):
    __slots__ = ()
    postgres_type = LIST_ELEMENT_CASTS["i64"]


class FloatList(SqlList):
    __slots__ = ()
    postgres_type = LIST_ELEMENT_CASTS["f64"]

    def json(self) -> str:
        # JSON has no infinities or NaN: SQLite reads 9e999 as an infinity, and null for NaN
        # is what SQLite makes of a NaN argument of its own.
        return "[" + ",".join(map(_float_json, self)) + "]"


class BoolList(SqlList):
    """(SQLite's json_each gives true and false as 1 and 0, as svc stores a bool there.)"""

    __slots__ = ()
    postgres_type = LIST_ELEMENT_CASTS["bool"]


class TextList(SqlList):
    __slots__ = ()
    postgres_type = LIST_ELEMENT_CASTS["str"]


#: The class generated code wraps a List argument in, by the svc name of its element type.
LIST_CLASSES = {"i64": IntList, "i32": IntList, "f64": FloatList, "bool": BoolList,
                "str": TextList}
_UNUSUAL = frozenset(LIST_CLASSES.values()) | {memoryview}


def _float_json(value: float) -> str:
    if math.isfinite(value):
        return repr(float(value))
    if math.isnan(value):
        return "null"
    return "9e999" if value > 0 else "-9e999"


def usual(args: tuple) -> bool:
    """Whether the arguments go to the database as they are: no `str` holds a NUL, and none is
    a view or a List. (The builtins call it for every call with arguments: keep it small.)"""
    for arg in args:
        cls = type(arg)
        if cls is str:
            if "\x00" in arg:
                return False
        elif cls in _UNUSUAL:
            return False
    return True


def without_views(args: tuple) -> tuple:
    """The arguments with each `view[bytes]` copied into bytes."""
    if memoryview not in map(type, args):
        return args
    return tuple(bytes(a) if type(a) is memoryview else a for a in args)


def nul_refused(sql: str, args: tuple) -> SvcError | None:
    """The `invalid` error for the first argument holding a NUL character, or None."""
    for position, arg in enumerate(args, 1):
        cls = arg.__class__
        if cls is str:
            held = "\x00" in arg
        elif cls is TextList:
            held = any("\x00" in value for value in arg)
        else:
            continue
        if held:
            message = (f"text with a NUL character (U+0000) cannot go to the database "
                       f"(SQL argument {position})")
            return SvcError("invalid", message,
                            detail=f"invalid error: {message} (in SQL: {shorten(sql)})")
    return None
