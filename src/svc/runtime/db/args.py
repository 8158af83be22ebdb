"""The arguments of `db_exec`, `db_all` and `db_one`, looked at before they reach a database,
so that one program behaves alike on SQLite and PostgreSQL.

- **NUL.** PostgreSQL's text cannot hold the character U+0000 (asyncpg's error, a 500), while
  SQLite stores it. svc has one rule for both: a `str` argument holding a NUL, or a List
  argument holding such a `str`, is refused with an `invalid` error (400) naming the argument,
  before anything is sent. So nothing is written, and a transaction stays usable.
- **Views.** A `view[bytes]` argument is copied into bytes: its buffer may be reused once
  its request ends, and an SQLite job may run later.
- **Lists.** A `List[i64]`, `List[i32]`, `List[f64]`, `List[bool]`, `List[str]` or List of
  an enum argument stands for its values in `col IN (?n)`, and for itself as a JSON value
  anywhere else (sql_text.py writes the placeholder for each database). Generated code wraps
  it in the class of its element type (`IntList`, ...): a tuple, so the values are those of
  the moment of the call, and a type that names the PostgreSQL array type even for an empty
  list (whose values could not tell).
- **JSON.** Any other List, a Map or a class instance goes to the database as JSON text (a
  `jsonb` parameter on PostgreSQL). Generated code wraps it in `Json` (`JsonList` for a List,
  which cannot stand for its values in `IN (?n)`); `with_json` encodes it, as `json_encode`
  would, once the call is made. An f64 that is inf or NaN, which JSON cannot carry, is refused
  with an `invalid` error, as is a NUL in its text. An enum member needs nothing: at run time
  it is its name, a `str`.

`usual(args)` is the hot path: one look at each argument's class, and a search for NUL in
each `str`, for calls with no NUL, view or List. (It replaced the backends' own search for
views, which cost about as much: measured in bench/measurements/database.md.)
"""

from __future__ import annotations

import json
import math
import re

import msgspec

from svc.rules.sql_params import LIST_ELEMENT_CASTS
from svc.runtime.db.errors import shorten
from svc.runtime.lib.support import SvcError


class SqlList(tuple):
    """A List argument: its values, the kind of each (rules/sql_params.py) and the
    PostgreSQL array type they are sent as in `IN (?n)`."""

    __slots__ = ()
    kind = ""
    postgres_type = ""

    def json(self) -> str:
        """The values as a JSON array, for SQLite's `json_each`."""
        return json.dumps(self, ensure_ascii=False, separators=(",", ":"))


class IntList(SqlList):
    __slots__ = ()
    kind = "i64"
    postgres_type = LIST_ELEMENT_CASTS[kind]


class FloatList(SqlList):
    __slots__ = ()
    kind = "f64"
    postgres_type = LIST_ELEMENT_CASTS[kind]

    def json(self) -> str:
        # JSON has no infinities or NaN: SQLite reads 9e999 as an infinity, and null for NaN
        # is what SQLite makes of a NaN argument of its own.
        return "[" + ",".join(map(_float_json, self)) + "]"

    def finite(self) -> bool:
        """Whether every value is finite, as a JSON value (not a list for IN) must be."""
        return all(map(math.isfinite, self))


class BoolList(SqlList):
    """(SQLite's json_each gives true and false as 1 and 0, as svc stores a bool there.)"""

    __slots__ = ()
    kind = "bool"
    postgres_type = LIST_ELEMENT_CASTS[kind]


class TextList(SqlList):
    __slots__ = ()
    kind = "str"
    postgres_type = LIST_ELEMENT_CASTS[kind]


#: The class generated code wraps a List argument in, by the svc name of its element type
#: (a List of an enum is a TextList: a member is its name).
LIST_CLASSES = {"i64": IntList, "i32": IntList, "f64": FloatList, "bool": BoolList,
                "str": TextList}


class Json:
    """A Map or class argument, sent as JSON text: `text` is set by `with_json`. `maps`: its
    type holds a Map somewhere, whose keys are written in the order PostgreSQL's `jsonb`
    keeps them (by length, then bytes), on both databases, so that a Map read back lists its
    keys in the same order from either."""

    __slots__ = ("value", "text", "maps")

    def __init__(self, value, maps: bool = False) -> None:
        self.value = value
        self.text = ""
        self.maps = maps


class JsonList(Json):
    """A List argument whose elements are not i64, i32, f64, bool, str or an enum (a List of
    classes, of Lists, of `T?`): a JSON value wherever it stands, never values for `IN`."""

    __slots__ = ()


def optional(cls: type, value, *more):
    """A `T?` argument of a List, Map or class type: None (SQL NULL), or the value wrapped."""
    return None if value is None else cls(value, *more)


_UNUSUAL = frozenset(LIST_CLASSES.values()) | {memoryview, Json, JsonList}


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


def with_json(sql: str, args: tuple) -> tuple | SvcError:
    """The arguments with each `Json` encoded (its `text`), or the `invalid` error of the
    first that cannot be: an f64 that is inf or NaN, or text holding a NUL character."""
    for position, arg in enumerate(args, 1):
        if isinstance(arg, Json):
            value = arg.value
            data = _encoder.encode(_jsonb_order(msgspec.to_builtins(value)) if arg.maps
                                   else value)
            if b"null" in data and not _finite(value):
                return not_finite(sql, position)
            arg.text = data.decode("utf-8")
    return args


def not_finite(sql: str, position: int) -> SvcError:
    message = (f"an f64 value is inf or NaN, which JSON cannot carry to the database "
               f"(SQL argument {position})")
    return SvcError("invalid", message, detail=f"invalid error: {message} (in SQL: {shorten(sql)})")


_encoder = msgspec.json.Encoder()
#: A JSON string's escape of U+0000: `\u0000` after an even number of backslashes.
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _jsonb_order(value):
    """`value` (made of dicts, lists and scalars) with every object's keys in jsonb's order."""
    cls = value.__class__
    if cls is dict:
        return {key: _jsonb_order(value[key]) for key in sorted(value, key=_jsonb_key)}
    if cls is list:
        return [_jsonb_order(item) for item in value]
    return value


def _jsonb_key(key: str) -> tuple[int, bytes]:
    data = key.encode("utf-8")
    return len(data), data


def _finite(value) -> bool:
    """Whether no f64 in `value` (at any depth) is inf or NaN, which msgspec writes as null."""
    cls = value.__class__
    if cls is float:
        return math.isfinite(value)
    if cls is list or cls is tuple:
        return all(_finite(item) for item in value)
    if cls is dict:
        return all(_finite(item) for item in value.values())
    fields = getattr(value, "__struct_fields__", None)
    if fields is not None:
        return all(_finite(getattr(value, name)) for name in fields)
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
        elif cls is Json or cls is JsonList:
            held = "\\u0000" in arg.text and _NUL_ESCAPE.search(arg.text) is not None
        else:
            continue
        if held:
            message = (f"text with a NUL character (U+0000) cannot go to the database "
                       f"(SQL argument {position})")
            return SvcError("invalid", message,
                            detail=f"invalid error: {message} (in SQL: {shorten(sql)})")
    return None
