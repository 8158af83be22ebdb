"""Binding: a request's path captures, query, body and database into a handler's arguments.

Each route gets a binder made for it at startup (`make_binder`): a function, generated from
its parameters, that does exactly what the route needs in order, with each parameter's name,
converter and error reasons already in place. A generic loop over the parameters paid, per
request and parameter, for finding the source, encoding the name and looking up the
converter (measured: ~7k instructions of the ~56k a GET /query costs). What binding refuses
is a `BindError` naming the parameter (400, or 415 for a body that is not JSON); a body whose
fields break their class's rules is a 422 naming every such field (only a route whose body
type has rules gets that check: svc.rules.field_checks).

A route with `Upload` parameters has its body received into files first (uploads.py): its
binder's `body` is the `ReceivedForm`, whose files fill the Upload parameters and whose form
fields are read like the query string's parameters, after it (a name in both: the query's).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable
from urllib.parse import unquote_to_bytes

import msgspec

from svc.rules.contract import INT_RANGES, Param, ParamSource
from svc.rules.field_checks import NOT_ACCEPTABLE, checker_of


class BindError(Exception):
    """A request whose arguments cannot be bound: answered with `status` and `reason`, and
    `fields`, what is wrong with each field of the body, when that is known."""

    def __init__(self, status: int, reason: str, fields: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.fields = fields

    def body(self) -> bytes:
        """The answer's JSON: `{"error": reason}`, with `"fields"` when there are some (the
        shape of an `unprocessable` error's answer)."""
        if self.fields:
            return msgspec.json.encode({"error": self.reason, "fields": self.fields})
        return msgspec.json.encode({"error": self.reason})


# --- typed conversion of path and query values ------------------------------------------------

_INT = re.compile(rb"[+-]?[0-9]{1,40}\Z")
_FLOAT = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8")


def _integer(kind: str) -> Callable[[bytes], int]:
    low, high = INT_RANGES[kind]

    def convert(raw: bytes) -> int:
        # bytes.isdigit() is ASCII-only; int() alone would also take " 1", "1_0" and "+1".
        if not (raw.isdigit() and len(raw) <= 40) and not _INT.match(raw):
            raise ValueError
        value = int(raw)
        if not low <= value <= high:
            raise ValueError
        return value

    return convert


def _float(raw: bytes) -> float:
    if not _FLOAT.match(raw):
        raise ValueError
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError
    return value


def _bool(raw: bytes) -> bool:
    if raw == b"true":
        return True
    if raw == b"false":
        return False
    raise ValueError


CONVERTERS: dict[str, Callable[[bytes], Any]] = {
    "i64": _integer("i64"),
    "i32": _integer("i32"),
    "f64": _float,
    "bool": _bool,
    "str": _text,
}


def parse_query(query: bytes) -> dict[bytes, bytes]:
    """`a=1&b=x%20y` → {b"a": b"1", b"b": b"x y"}; `+` is a space; the first value wins.

    Names and values with nothing to decode (most of them) are kept as they are, tested
    here rather than in a call per name and value (measured: /query 14% of its time was in
    decoding, before any of them skipped it)."""
    values: dict[bytes, bytes] = {}
    for pair in query.split(b"&"):
        if not pair:
            continue
        name, _, value = pair.partition(b"=")
        if _PERCENT in name or _PLUS in name:
            name = _decode(name)
        if name not in values:
            values[name] = _decode(value) if _PERCENT in value or _PLUS in value else value
    return values


_PERCENT, _PLUS = ord("%"), ord("+")


def _decode(raw: bytes) -> bytes:
    """Form decoding of one name or value that has a `%` or a `+`. (The callers test for
    ints, not for `b"%"`: a bytes needle costs ~10x more per test, measured.)"""
    return unquote_to_bytes(raw.replace(b"+", b" "))


# --- request bodies ---------------------------------------------------------------------------

UNSUPPORTED_MEDIA = "unsupported media type: expected application/json"


#: Content-Type value → whether it names JSON. Clients send the same few values again and
#: again, so the answer is kept (measured: the check cost a POST ~0.3 µs); bounded, so that
#: a client sending a new value with each request cannot grow it.
_JSON_MEDIA: dict[bytes, bool] = {}
_JSON_MEDIA_KEPT = 256


def is_json_media_type(content_type: bytes) -> bool:
    """application/json or application/<anything>+json, parameters allowed."""
    known = _JSON_MEDIA.get(content_type)
    if known is None:
        media = content_type.split(b";", 1)[0].strip().lower()
        known = media == b"application/json" or (media.startswith(b"application/")
                                                  and media.endswith(b"+json"))
        if len(_JSON_MEDIA) < _JSON_MEDIA_KEPT:
            _JSON_MEDIA[content_type] = known
    return known


def decode_body(decoder: msgspec.json.Decoder, body: bytes, content_type: bytes | None) -> Any:
    """Strict JSON into the parameter's class. A missing Content-Type is taken as JSON."""
    if content_type is not None and not is_json_media_type(content_type):
        raise BindError(415, UNSUPPORTED_MEDIA)
    try:
        return decoder.decode(body)
    except UnicodeDecodeError:  # Python's words, about a position inside one JSON string
        raise BindError(400, f"invalid request body: {not_utf8(body)}")
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
        message = str(exc)
        if message.startswith("Invalid enum value"):  # name the members (error path only)
            from svc.runtime.lib.enum_errors import with_allowed_names
            message = with_allowed_names(message, decoder.type)
        fields = field_of(message) if isinstance(exc, msgspec.ValidationError) else None
        raise BindError(400, f"invalid request body: {message}", fields)


def checked(value: Any, check: Callable[[Any], dict]) -> Any:
    """The decoded body, or a 422 naming every field that breaks its rule."""
    failures = check(value)
    if failures:
        raise BindError(422, NOT_ACCEPTABLE, failures)
    return value


def field_of(message: str) -> dict[str, str] | None:
    """msgspec's "Expected `str`, got `int` - at `$.items[0].title`" as the field it names and
    what is wrong with it, `{"items[0].title": "expected `str`, got `int`"}`: the `fields`
    shape of a 422. A missing or unknown field is named itself; None when no field is named
    (a body that is not an object)."""
    text, _, at = message.partition(" - at `$")
    path = at[:-1].lstrip(".")
    for start, what in (("Object missing required field `", "missing required field"),
                        ("Object contains unknown field `", "unknown field")):
        if text.startswith(start):
            name = text[len(start):-1]
            return {f"{path}.{name}" if path else name: what}
    if not path:
        return None
    return {path: text[:1].lower() + text[1:]}


def not_utf8(body: bytes) -> str:
    """Where a body that is not UTF-8 first goes wrong, in the words of `to_str`: the offset
    of the first bad byte in the whole body (only called on that error)."""
    try:
        bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 (bad byte at offset {exc.start})"
    return "not valid UTF-8"


# --- the binder of one route ------------------------------------------------------------------

#: The generated binder's signature, the same for every route.
BINDER_ARGS = "captures, query, body, content_type, db"


def make_binder(params: tuple[Param, ...], capture_index: dict[str, int],
                decoders: dict[str, msgspec.json.Decoder]) -> Callable[..., list[Any]]:
    """`binder(captures, query, body, content_type, db)` → the handler's arguments in `params`
    order (a `Headers` parameter's place holds None: the connection fills it), or BindError.
    For a route with `Upload` parameters, `body` is the request's `uploads.ReceivedForm`.

    The function is written out as Python source and compiled once, the way `dataclasses`
    writes `__init__`: what varies (names, reasons, converters) is a constant in its body.
    """
    names: dict[str, Any] = {"BindError": BindError, "parse_query": parse_query,
                             "unquote_to_bytes": unquote_to_bytes, "decode_body": decode_body,
                             "_PERCENT": _PERCENT}
    lines = [f"def binder({BINDER_ARGS}):"]
    if any(p.source is ParamSource.QUERY for p in params):
        if any(p.source is ParamSource.UPLOAD for p in params):  # the query's value wins
            lines.append("    values = {**body.fields, **parse_query(query)}")
        else:
            lines.append("    values = parse_query(query)")
    for i, param in enumerate(params):
        lines += _bind_one(i, param, capture_index, decoders, names)
    lines.append(f"    return [{', '.join(f'a{i}' for i in range(len(params)))}]")
    exec(compile("\n".join(lines), f"<binder of {', '.join(p.name for p in params)}>", "exec"),
         names)
    return names["binder"]


def _member_of(members: tuple) -> Callable[[bytes], Any]:
    """The converter of an enum parameter: one of the member names, as is."""
    names = frozenset(members)

    def convert(raw: bytes) -> str:
        text = raw.decode("utf-8")
        if text not in names:
            raise ValueError
        return text

    return convert


def _converter(param: Param) -> Callable[[bytes], Any]:
    """The converter of a path or query parameter, whose type is a scalar's name or an
    enum's member names."""
    if isinstance(param.type, tuple):
        return _member_of(param.type)
    if not isinstance(param.type, str):
        raise ValueError(f"parameter {param.name!r} of {param.source} has type {param.type!r}")
    return CONVERTERS[param.type]


def _bind_one(i: int, param: Param, capture_index: dict[str, int],
              decoders: dict[str, msgspec.json.Decoder], names: dict[str, Any]) -> list[str]:
    """The lines that set `a<i>` for one parameter (objects they need go into `names`)."""
    source = param.source
    if source is ParamSource.PATH:
        names[f"convert{i}"] = _converter(param)
        return [f"    raw = captures[{capture_index[param.name]}]",
                "    if _PERCENT in raw:",
                "        raw = unquote_to_bytes(raw)",
                *_converted(i, _invalid(param, "path"))]
    if source is ParamSource.QUERY:
        names[f"convert{i}"] = _converter(param)
        missing = ([f"        a{i} = None"] if param.optional else
                   [f"        raise BindError(400, {_missing(param)!r})"])
        return [f"    raw = values.get({param.name.encode()!r})",
                "    if raw is None:", *missing,
                "    else:", *("    " + line for line in _converted(i, _invalid(param, "query")))]
    if source is ParamSource.BODY:
        names[f"decoder{i}"] = decoders[param.name]
        check = checker_of(param.type)
        if check is None:  # no rule anywhere in the body's type: nothing more to do
            return [f"    a{i} = decode_body(decoder{i}, body, content_type)"]
        names["checked"], names[f"check{i}"] = checked, check
        return [f"    a{i} = checked(decode_body(decoder{i}, body, content_type), check{i})"]
    if source is ParamSource.RAW:
        return [f"    a{i} = memoryview(body)" if param.type == "view" else f"    a{i} = bytes(body)"]
    if source is ParamSource.DB:
        return [f"    a{i} = db"]
    if source is ParamSource.HEADERS or source is ParamSource.EVENTS \
            or source is ParamSource.SOCKET:
        return [f"    a{i} = None"]  # set by the connection or the answer, which have the request
    if source is ParamSource.UPLOAD:
        lines = [f"    a{i} = body.files.get({param.name!r})"]
        if not param.optional:
            lines += [f"    if a{i} is None:",
                      f"        raise BindError(400, {f'missing file {param.name!r}'!r})"]
        return lines
    raise ValueError(f"unknown parameter source {source!r}")


def _converted(i: int, reason: str) -> list[str]:
    return ["    try:",
            f"        a{i} = convert{i}(raw)",
            "    except (ValueError, UnicodeDecodeError):",
            f"        raise BindError(400, {reason!r})"]


def _invalid(param: Param, where: str) -> str:
    if isinstance(param.type, tuple):
        return (f"invalid {where} parameter '{param.name}': expected one of "
                f"{', '.join(param.type)}")
    return f"invalid {where} parameter '{param.name}': expected {param.type}"


def _missing(param: Param) -> str:
    return f"missing required query parameter '{param.name}'"
