"""Run-time support that generated svc code calls: errors, Html, checked integer arithmetic.

Kept small and free of server internals: the code generator targets these names (see
docs/internals.md), and the server only needs `SvcError`, `SvcFault`, `Html` and
`STATUS_BY_KIND` from here.
"""

from __future__ import annotations

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
I32_MIN = -(2**31)
I32_MAX = 2**31 - 1

#: Error kind → HTTP status (LANGUAGE.md §6).
STATUS_BY_KIND = {
    "invalid": 400,
    "not_found": 404,
    "internal": 500,
    "database": 500,
    "timeout": 504,
    "busy": 503,
}


class SvcError:
    """An svc `Error` value. `Result` is unboxed: an error result *is* an SvcError instance."""

    __slots__ = ("kind", "message")

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.message = message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SvcError) and (self.kind, self.message) == (other.kind, other.message)

    def __hash__(self) -> int:
        return hash((self.kind, self.message))

    def __repr__(self) -> str:
        return f"SvcError({self.kind!r}, {self.message!r})"


class SvcFault(Exception):
    """A run-time fault (overflow, division by zero, index out of range): kind `internal`.

    Faults unwind to the handler boundary (500, logged) or out of `main` (exit 1); `match`
    does not catch them.
    """


class Html:
    """An HTML document made by `html(text)`; handlers returning it answer text/html."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Html) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Html({self.text!r})"


# --- checked integer arithmetic -------------------------------------------------------------

def _check64(value: int) -> int:
    if I64_MIN <= value <= I64_MAX:
        return value
    raise SvcFault("integer overflow (i64)")


def _check32(value: int) -> int:
    if I32_MIN <= value <= I32_MAX:
        return value
    raise SvcFault("integer overflow (i32)")


def _trunc_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as in C and Rust."""
    if b == 0:
        raise SvcFault("division by zero")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _trunc_mod(a: int, b: int) -> int:
    """Remainder with the sign of the dividend: a == b * (a / b) + a % b."""
    if b == 0:
        raise SvcFault("division by zero")
    return a - b * _trunc_div(a, b)


def add64(a: int, b: int) -> int:
    return _check64(a + b)


def sub64(a: int, b: int) -> int:
    return _check64(a - b)


def mul64(a: int, b: int) -> int:
    return _check64(a * b)


def div64(a: int, b: int) -> int:
    return _check64(_trunc_div(a, b))


def mod64(a: int, b: int) -> int:
    return _trunc_mod(a, b)


def neg64(a: int) -> int:
    return _check64(-a)


def add32(a: int, b: int) -> int:
    return _check32(a + b)


def sub32(a: int, b: int) -> int:
    return _check32(a - b)


def mul32(a: int, b: int) -> int:
    return _check32(a * b)


def div32(a: int, b: int) -> int:
    return _check32(_trunc_div(a, b))


def mod32(a: int, b: int) -> int:
    return _trunc_mod(a, b)


def neg32(a: int) -> int:
    return _check32(-a)
