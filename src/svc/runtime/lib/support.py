"""Run-time support that generated svc code calls: errors, Html, checked integer arithmetic.

Kept small and free of server internals (it imports nothing of the server): the code
generator targets these names (see docs/internals.md), and the server only needs `SvcError`,
`SvcFault`, `Html` and `STATUS_BY_KIND` from here. Generated code gets `serve` from
`svc.runtime.http.server` itself.
"""

from __future__ import annotations

import math
import os
import re
import sys
import typing
from typing import Annotated

import msgspec
import msgspec.inspect

from svc.rules.contract import I32_MAX, I32_MIN, I64_MAX, I64_MIN
from svc.rules.field_checks import checker_of

_INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)

#: Error kind → HTTP status (docs/reference/language.md, errors).
STATUS_BY_KIND = {
    "invalid": 400,
    "not_found": 404,
    "conflict": 409,
    "unauthorized": 401,
    "forbidden": 403,
    "internal": 500,
    "database": 500,
    "timeout": 504,
    "busy": 503,
    "unprocessable": 422,
    "too_many_requests": 429,
    "bad_gateway": 502,  # an outbound call failed (svc.runtime.lib.outbound)
}


class SvcError:
    """An svc `Error` value. `Result` is unboxed: an error result *is* an SvcError instance.

    `detail`, when set, is for the server log only (a constraint violation's database
    message and SQL); it is no part of the value (`==`, `error_message`). `headers` are the
    header fields its answer carries (`with_header`, `too_many_requests`' Retry-After) and
    `fields` the field-level reasons of an `unprocessable` error (its answer's `"fields"`);
    both are part of the value (svc.runtime.lib.errors makes them). `retry` marks a database
    error that rolled a whole transaction back because it clashed with another one (it left
    nothing behind): the runtime may run a handler the compiler proved safe again
    (svc.runtime.http.retries). It is no part of the value either."""

    __slots__ = ("kind", "message", "detail", "headers", "fields", "retry")

    def __init__(self, kind: str, message: str, detail: str | None = None,
                 headers: tuple[tuple[str, str], ...] = (),
                 fields: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.message = message
        self.detail = detail
        self.headers = headers
        self.fields = fields
        self.retry = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SvcError) and (self.kind, self.message) == (other.kind, other.message) \
            and self.headers == other.headers and self.fields == other.fields

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


def overflow64() -> int:
    """Raised by generated code whose inline range check of `+ - *` on i64 failed."""
    raise SvcFault("integer overflow (i64)")


def overflow32() -> int:
    raise SvcFault("integer overflow (i32)")


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


def fdiv(a: float, b: float) -> float:
    """f64 division with IEEE results (inf, -inf, nan) instead of Python's ZeroDivisionError."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0.0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def fmod(a: float, b: float) -> float:
    """f64 remainder with the sign of the dividend, like the integer `%` (C's fmod)."""
    if b == 0.0:
        return math.nan
    return math.fmod(a, b)


# --- results and errors (docs/reference/language.md) ------------------------------------------

def error(reason: str) -> SvcError:
    return SvcError("invalid", reason)


def not_found(reason: str) -> SvcError:
    return SvcError("not_found", reason)


def internal_error(reason: str) -> SvcError:
    return SvcError("internal", reason)


def conflict(reason: str) -> SvcError:
    return SvcError("conflict", reason)


def unauthorized(reason: str) -> SvcError:
    return SvcError("unauthorized", reason)


def forbidden(reason: str) -> SvcError:
    return SvcError("forbidden", reason)


class Propagate(Exception):
    """Carries the error of a failed `try e` to the boundary of the enclosing svc function.

    Generated functions that use `try` catch it and return `.error`; it never escapes one.
    """

    __slots__ = ("error",)

    def __init__(self, error: SvcError) -> None:
        self.error = error


def unwrap(value):
    """`try value`: the ok value, or unwind (via Propagate) to return the error."""
    if value.__class__ is SvcError:
        raise Propagate(value)
    return value


# --- general builtins -------------------------------------------------------------------------

def print_(text: str) -> None:
    """`print(s)`: one line on stdout, flushed at once so logs interleave in order."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def len_(value) -> int:
    """`len(x)`: UTF-8 bytes of a str, bytes of bytes/view, elements of a list."""
    if value.__class__ is str:
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if value.__class__ is memoryview:
        return value.nbytes
    return len(value)


def index(seq, i: int):
    """`xs[i]` with a fault (never Python's negative indexing) when `i` is out of range."""
    if 0 <= i < len(seq):
        return seq[i]
    raise SvcFault(f"index {i} out of range for length {len(seq)}")


def set_index(seq: list, i: int, value) -> None:
    """`xs[i] = v` with the same range check as `index`."""
    if 0 <= i < len(seq):
        seq[i] = value
        return
    raise SvcFault(f"index {i} out of range for length {len(seq)}")


def format_value(value) -> str:
    """`str(x)`: integers in decimal, bools as `True`/`False`, floats as the shortest text that
    reads back as the same double (`2.5`, `1.0`, `1e+16`, `inf`, `nan`)."""
    if value.__class__ is float:
        return repr(value)
    return str(value)


def to_i64(value) -> int:
    """`i64(x)`: widens an i32 (identity); a float is truncated toward zero (fault if it does
    not fit or is not finite)."""
    if value.__class__ is float:
        if value != value or value in (math.inf, -math.inf):
            raise SvcFault(f"cannot convert {value!r} to i64")
        return _check64(int(value))
    return value


def to_i32(value) -> int | SvcError:
    """`i32(x)`: narrows to i32, an `invalid` error when the value does not fit."""
    if value.__class__ is float:
        if value != value or value in (math.inf, -math.inf):
            return SvcError("invalid", f"{value!r} does not fit in i32")
        value = int(value)
    if I32_MIN <= value <= I32_MAX:
        return value
    return SvcError("invalid", f"{value} does not fit in i32")


def to_f64(value) -> float:
    return float(value)


def parse_i64(text: str) -> int | SvcError:
    """Decimal text (optional sign, ASCII digits only) to i64, or an `invalid` error."""
    if not _INT_TEXT.fullmatch(text):
        return SvcError("invalid", f"not an integer: {text!r}")
    if len(text.lstrip("+-").lstrip("0")) > 19:  # too long for i64 (and int() caps digits)
        return SvcError("invalid", f"integer out of range for i64: {text[:40]}")
    value = int(text)
    if I64_MIN <= value <= I64_MAX:
        return value
    return SvcError("invalid", f"integer out of range for i64: {text}")


def env(name: str, default: str) -> str:
    return os.environ.get(name, default)


async def sleep(ms: int) -> None:
    import asyncio

    await asyncio.sleep(max(ms, 0) / 1000)


def copy(value):
    """`copy(x)`: an independent deep copy of lists and class instances (the rest is immutable)."""
    cls = value.__class__
    if cls is list:
        return [copy(item) for item in value]
    if cls is dict:
        return {key: copy(item) for key, item in value.items()}
    if hasattr(cls, "__struct_fields__"):
        return cls(**{name: copy(getattr(value, name)) for name in cls.__struct_fields__})
    own = getattr(cls, "__svc_copy__", None)
    if own is not None:  # a Response (runtime/http/custom_response.py): its fields can change
        return own(value)
    return value


def html(text: str) -> Html:
    return Html(text)


# --- JSON ------------------------------------------------------------------------------------
# Types are described to msgspec with the helpers below; generated classes use the same ones
# in their field annotations, so json_decode and request bodies apply the same strict rules.

T_I64 = Annotated[int, msgspec.Meta(ge=I64_MIN, le=I64_MAX)]
T_I32 = Annotated[int, msgspec.Meta(ge=I32_MIN, le=I32_MAX)]
T_F64 = float
T_BOOL = bool
T_STR = str
T_BYTES = bytes
T_ANY = typing.Any
List = list
Dict = dict
Optional = typing.Optional
Literal = typing.Literal  # an svc enum: its member names (a value is its member's name)
Struct = msgspec.Struct
range_ = range

_encoder = msgspec.json.Encoder()
_decoders: dict = {}


def json_encode(value) -> str:
    """`json_encode(v)`: compact JSON text (classes as objects with their fields in order)."""
    try:
        data = _encoder.encode(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise SvcFault(f"cannot encode as JSON: {exc}") from None
    if b"null" in data:
        require_finite(value)
    return data.decode("utf-8")


def require_finite(value) -> None:
    """Fault on an f64 that is inf or NaN anywhere in `value`: JSON has no form for it.

    msgspec writes such floats as `null`, which would turn a number field into a missing
    value; callers look only when the encoded bytes contain a `null`.
    """
    if not _finite(value):
        raise SvcFault("cannot encode as JSON: an f64 value is inf or NaN, which JSON cannot carry")


def _finite(value) -> bool:
    if value.__class__ is float:
        return math.isfinite(value)
    if value.__class__ is list:
        return all(_finite(item) for item in value)
    fields = getattr(value, "__struct_fields__", None)
    if fields is not None:
        return all(_finite(getattr(value, name)) for name in fields)
    return True


def json_decode(tp, data) -> object:
    """`json_decode[T](s)`: strict decoding into `tp` (exact fields, exact types, ranges);
    any problem is an `invalid` error whose message says what and where. A value whose fields
    break their class's rules is an `unprocessable` error naming each such field."""
    decoder = _decoders.get(tp)
    if decoder is None:
        decoder = _decoders[tp] = msgspec.json.Decoder(tp)
    try:
        value = decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError) as exc:
        return SvcError("invalid", json_error_message(exc))
    return _within_rules(tp, value)


def _within_rules(tp, value) -> object:
    """`value`, or the `unprocessable` error naming each field that breaks its class's rules
    (`@length`, `@range`, ...)."""
    check = checker_of(tp)  # None (after the first call, one lookup) for a type without rules
    failures = check(value) if check is not None else None
    if failures:
        return SvcError("unprocessable", DECODED_NOT_ACCEPTABLE, None, (), failures)
    return value


#: The message of `json_decode[T]`'s error for a value whose fields break their rules.
DECODED_NOT_ACCEPTABLE = "the JSON value's fields are not acceptable"


def json_decode_lenient(tp, data) -> object:
    """`json_decode_lenient[T](s)`: as `json_decode`, but object fields that T's classes do not
    declare are ignored, at any depth: another service's answer may say more than we read.

    msgspec cannot relax a Struct's `forbid_unknown_fields` per decoder, so the text is read
    as plain JSON values, the unknown fields dropped by walking `tp`'s shape, and the rest
    converted with the same strict rules (and messages, `$.id`) as `json_decode`, field rules
    included."""
    shape = _shapes.get(tp)
    if shape is None:
        shape = _shapes[tp] = msgspec.inspect.type_info(tp)
    try:
        value = msgspec.convert(_known_fields(msgspec.json.decode(data), shape), tp)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError) as exc:
        return SvcError("invalid", json_error_message(exc))
    return _within_rules(tp, value)


_shapes: dict = {}


def _known_fields(value, shape):
    """`value` (plain JSON values) without the object fields `shape` does not declare."""
    if value.__class__ is dict:
        if isinstance(shape, msgspec.inspect.StructType):
            fields = {f.encode_name: f.type for f in shape.fields}
            return {k: _known_fields(v, fields[k]) for k, v in value.items() if k in fields}
        if isinstance(shape, msgspec.inspect.DictType):
            return {k: _known_fields(v, shape.value_type) for k, v in value.items()}
    elif value.__class__ is list and isinstance(shape, msgspec.inspect.ListType):
        return [_known_fields(item, shape.item_type) for item in value]
    if isinstance(shape, msgspec.inspect.UnionType):  # T?: T or None
        inner = [t for t in shape.types if not isinstance(t, msgspec.inspect.NoneType)]
        return _known_fields(value, inner[0]) if len(inner) == 1 else value
    return value  # a scalar, or a shape that does not fit: convert says what is wrong


def json_error_message(exc: Exception) -> str:
    """The message of a strict-JSON failure (msgspec's text says what and where: `$.id`)."""
    if isinstance(exc, UnicodeDecodeError):
        return "JSON text is not valid UTF-8"
    if isinstance(exc, msgspec.ValidationError):
        return f"invalid JSON value: {exc}"
    return str(exc)
