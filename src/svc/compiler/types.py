"""Type representations shared by the checker and the code generator.

Types are small frozen dataclasses, so they compare and hash structurally: `ListOf(I64) ==
ListOf(I64)`. `format_type` spells a type the way the user writes it, for diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass


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
class ClassRef(Type):
    """A user class, by name (names are global across the merged files)."""

    name: str


I64 = Prim("i64")
I32 = Prim("i32")
F64 = Prim("f64")
BOOL = Prim("bool")
STR = Prim("str")
BYTES = Prim("bytes")
UNIT = Prim("unit")
HTML = Prim("Html")
DB = Prim("Db")
ERROR = Prim("Error")
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
    if isinstance(t, ClassRef):
        return t.name
    return repr(t)
