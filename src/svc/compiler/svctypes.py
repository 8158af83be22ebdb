"""Type representations shared by the checker and the code generator.

Types are small frozen dataclasses, so they compare and hash structurally: `ListOf(I64) ==
ListOf(I64)`. `format_type` spells a type the way the user writes it, for diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Type:
    """Base of all svc types."""


@dataclass(frozen=True)
class Prim(Type):
    """A built-in named type: i64 i32 f64 bool str bytes unit Html Db Error, and the internal
    `None` (the type of the literal None before context makes it a `T?`)."""

    name: str


@dataclass(frozen=True)
class View(Type):
    """`view[bytes]`: a read-only borrowed view; never stored, listed or returned."""

    inner: Type


@dataclass(frozen=True)
class ListOf(Type):
    elem: Type


@dataclass(frozen=True)
class Opt(Type):
    """`T?`."""

    inner: Type


@dataclass(frozen=True)
class ResultOf(Type):
    """`Result[T, Error]` (the error type is always Error)."""

    ok: Type


@dataclass(frozen=True)
class ResponseOf(Type):
    """`Response[T]`: a handler's answer with its own status and header fields."""

    body: Type


@dataclass(frozen=True)
class ClassRef(Type):
    """A user class, by name (names are global across the merged files). An instantiation of
    a generic class is a class of its own, named as written: `Page[Task]` (check/generics.py)."""

    name: str


@dataclass(frozen=True)
class MapOf(Type):
    """`Map[str, T]`: str keys (the only key type), values of `value`; a Python dict."""

    value: Type


@dataclass(frozen=True)
class TopicOf(Type):
    """`Topic[T]`: a named topic whose messages are T values (a constant made by
    `topic("name")`; at run time, its name)."""

    message: Type


@dataclass(frozen=True)
class SubscriptionOf(Type):
    """`Subscription[T]`: a live subscription to a `Topic[T]` (`subscribe`); never stored,
    listed or returned: it ends with the function that holds it."""

    message: Type


@dataclass(frozen=True)
class EventsOf(Type):
    """`Events[T]`: an event stream route's stream, whose events are T values (a handler
    parameter); never stored, listed or returned."""

    message: Type


@dataclass(frozen=True)
class SocketOf(Type):
    """`WebSocket[In, Out]`: a WebSocket route's session, receiving `In` messages and sending
    `Out` ones (a handler parameter); never stored, listed or returned."""

    incoming: Type
    outgoing: Type


@dataclass(frozen=True)
class TypeParam(Type):
    """A generic class's type parameter (`T` of `class Page[T]`), seen only while the
    class's own fields are checked; every use of the class substitutes a real type."""

    name: str


@dataclass(frozen=True)
class EnumRef(Type):
    """A user enum, by name, with its member names in declaration order. At run time a value
    is its member's name (a str), so JSON, equality and `str(x)` need nothing more."""

    name: str
    members: tuple[str, ...]


I64 = Prim("i64")
I32 = Prim("i32")
F64 = Prim("f64")
BOOL = Prim("bool")
STR = Prim("str")
BYTES = Prim("bytes")
UNIT = Prim("unit")
HTML = Prim("Html")
DB = Prim("Db")
TX = Prim("Tx")  # a transaction: passed to functions, never stored, listed or returned
ERROR = Prim("Error")
HEADERS = Prim("Headers")  # a request's header fields: passed to functions, never stored
UPLOAD = Prim("Upload")  # a file the request brought: passed to functions, never stored
NONE = Prim("None")

INTEGERS = (I64, I32)
NUMBERS = (I64, I32, F64)
#: Types a database argument, query parameter or row column may have (and `T?` of them).
SCALARS = (I64, I32, F64, BOOL, STR, BYTES)


def format_type(t: Type) -> str:
    """The type as the user would write it: `List[Task]`, `i64?`, `Result[unit, Error]`."""
    if isinstance(t, Prim):
        return t.name
    if isinstance(t, View):
        return f"view[{format_type(t.inner)}]"
    if isinstance(t, ListOf):
        return f"List[{format_type(t.elem)}]"
    if isinstance(t, Opt):
        return f"{format_type(t.inner)}?"
    if isinstance(t, ResultOf):
        return f"Result[{format_type(t.ok)}, Error]"
    if isinstance(t, (ClassRef, EnumRef)):
        return t.name
    if isinstance(t, ResponseOf):
        return f"Response[{format_type(t.body)}]"
    if isinstance(t, MapOf):
        return f"Map[str, {format_type(t.value)}]"
    if isinstance(t, TypeParam):
        return t.name
    if isinstance(t, (TopicOf, SubscriptionOf, EventsOf)):
        return f"{_LIVE_NAMES[type(t)]}[{format_type(t.message)}]"
    if isinstance(t, SocketOf):
        return f"WebSocket[{format_type(t.incoming)}, {format_type(t.outgoing)}]"
    return repr(t)


_LIVE_NAMES = {TopicOf: "Topic", SubscriptionOf: "Subscription", EventsOf: "Events"}


# --- checker helpers --------------------------------------------------------------------------

#: The type of an expression that already produced a diagnostic. It is compatible with every
#: type, so one mistake yields one message; it never reaches the code generator, because a
#: program with diagnostics is not generated.
UNKNOWN = Prim("<unknown>")


def is_scalar_or_optional(t: Type) -> bool:
    """A database argument / row column type: a scalar or `T?` of a scalar."""
    return t in SCALARS or (isinstance(t, Opt) and t.inner in SCALARS)


#: The element types of a List that stands for its values in `col IN (?n)` (besides enums):
#: the scalars that JSON carries to SQLite and an array to PostgreSQL.
DB_LIST_ELEMENTS = (I64, I32, F64, BOOL, STR)


def is_db_list(t: Type) -> bool:
    """A List that stands for its values in `col IN (?n)` (anywhere else, a JSON value): of
    i64, i32, f64, bool, str or an enum."""
    return isinstance(t, ListOf) and (t.elem in DB_LIST_ELEMENTS or isinstance(t.elem, EnumRef))


def db_kind(t: Type) -> str | None:
    """What a value of `t` (not a `T?`) is to a database, as rules/sql_params.py names the
    kinds: a scalar's name (`i32` included), "enum", "json" for a List, Map or class, or
    None for any other type (which the checker tells apart with `is_json_type`)."""
    if t in SCALARS:
        assert isinstance(t, Prim)
        return t.name
    if isinstance(t, EnumRef):
        return "enum"
    if isinstance(t, (ListOf, MapOf, ClassRef)):
        return "json"
    return None


def held_type(t: Type) -> Type | None:
    """The one type a container type holds (a List's element, a `T?`'s value, a Map's value,
    a Result's ok type), or None for any other type."""
    if isinstance(t, ListOf):
        return t.elem
    if isinstance(t, Opt):
        return t.inner
    if isinstance(t, MapOf):
        return t.value
    if isinstance(t, ResultOf):
        return t.ok
    return None


def _occurs(t: Type, is_it: Callable[[Type], bool]) -> bool:
    """Whether `t`, or a type it holds at any depth of containers, `is_it`."""
    current: Type | None = t
    while current is not None:
        if is_it(current):
            return True
        current = held_type(current)
    return False


def contains_view(t: Type) -> bool:
    """Whether a `view[...]` occurs anywhere in `t` (it may not be stored, listed or returned)."""
    return _occurs(t, lambda u: isinstance(u, View))


def contains_tx(t: Type) -> bool:
    """Whether a `Tx` occurs anywhere in `t` (like a view, it may not be stored or returned)."""
    return _occurs(t, lambda u: u == TX)


def contains_headers(t: Type) -> bool:
    """Whether a `Headers` occurs anywhere in `t` (like a view, it may not be stored, listed
    or returned: it is the request's, and lives as long as the handler)."""
    return _occurs(t, lambda u: u == HEADERS)


def contains_upload(t: Type) -> bool:
    """Whether an `Upload` occurs anywhere in `t` (like `Headers`, it is the request's: its
    temporary file is closed when the request ends, so it may not be stored, listed or
    returned)."""
    return _occurs(t, lambda u: u == UPLOAD)


def contains_stream(t: Type) -> bool:
    """Whether a `Subscription[T]`, `Events[T]` or `WebSocket[In, Out]` occurs anywhere in `t`
    (like `Headers`, each lives as long as the function or request that holds it: it may not
    be stored, listed or returned)."""
    return _occurs(t, lambda u: isinstance(u, (SubscriptionOf, EventsOf, SocketOf)))


def is_json_type(t: Type, class_fields, _seen: frozenset = frozenset()) -> bool:
    """Whether values of `t` map to JSON and back: classes (all fields JSON), lists, numbers,
    str, bool, unit, `T?` and `Map[str, T]` (an object). `class_fields(name)` gives a
    class's field types."""
    if t in (I64, I32, F64, BOOL, STR, UNIT, UNKNOWN) or isinstance(t, (EnumRef, TypeParam)):
        return True  # UNKNOWN: already reported; TypeParam: each use of its class is checked
    if isinstance(t, MapOf):
        return is_json_type(t.value, class_fields, _seen)
    if isinstance(t, ListOf):
        return is_json_type(t.elem, class_fields, _seen)
    if isinstance(t, Opt):
        return is_json_type(t.inner, class_fields, _seen)
    if isinstance(t, ClassRef):
        if t.name in _seen:  # a recursive class is as JSON-able as its other fields
            return True
        seen = _seen | {t.name}
        return all(is_json_type(f, class_fields, seen) for f in class_fields(t.name))
    return False
