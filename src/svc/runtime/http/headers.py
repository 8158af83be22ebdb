"""A request's header fields as svc code sees them: the `Headers` value, `header` and `cookie`.

A `Headers` parameter gets the list of (name, value) byte pairs the parser already built for
the request (`protocol.Request.headers`, names as sent); nothing is copied or decoded until
the handler asks for a field. So a route that takes `Headers` costs one small object, and a
route that does not costs nothing at all.
"""

from __future__ import annotations


class Headers:
    """The request's header fields, in the order received (read-only for svc code)."""

    __slots__ = ("fields",)

    def __init__(self, fields: list[tuple[bytes, bytes]]) -> None:
        self.fields = fields

    def __repr__(self) -> str:
        return f"Headers({len(self.fields)} fields)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Headers) and other.fields == self.fields

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict) -> Headers:
        return self  # read-only: `copy(h)` may share it


def _text(raw: bytes) -> str:
    """A field value as text: UTF-8 when it is (what browsers and clients send today), else
    ISO-8859-1, which maps every byte, so no value is lost or refused."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


#: Names asked for → their lower-cased UTF-8 bytes. A handler asks for the same few literal
#: names on every request, so each is lowered and encoded once; bounded, as a name may be
#: computed.
_WANTED: dict[str, bytes] = {}
_WANTED_KEPT = 256


def _wanted(name: str) -> bytes:
    wanted = _WANTED.get(name)
    if wanted is None:
        wanted = name.lower().encode("utf-8", "replace")
        if len(_WANTED) < _WANTED_KEPT:
            _WANTED[name] = wanted
    return wanted


def values(h: Headers, name: str) -> list[str]:
    """Every value of the fields named `name` (any case), in the order received. Only a
    field of the same length is lowered for the comparison (most are not)."""
    wanted = _wanted(name)
    size = len(wanted)
    return [_text(value.strip(b" \t")) for key, value in h.fields
            if len(key) == size and key.lower() == wanted]


def header(h: Headers, name: str) -> str | None:
    """`header(h, name)`: the field's value; several fields of one name joined with ", "
    (RFC 9110 §5.3); None when the request has no such field. The usual single field is
    found without building a list."""
    wanted = _wanted(name)
    size = len(wanted)
    found = None
    for key, value in h.fields:
        if len(key) == size and key.lower() == wanted:
            if found is not None:
                return ", ".join(values(h, name))
            found = value
    return None if found is None else _text(found.strip(b" \t"))


def cookie(h: Headers, name: str) -> str | None:
    """`cookie(h, name)`: the value of the first cookie called `name` (case-sensitive) in the
    `Cookie` field(s), read as RFC 6265 §5.4 `name=value` pairs separated by `;`. A value in
    double quotes is given without them; a pair without `=` is skipped."""
    for field in values(h, "cookie"):
        for pair in field.split(";"):
            key, eq, value = pair.partition("=")
            if eq and key.strip(" \t") == name:
                value = value.strip(" \t")
                if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
                    value = value[1:-1]
                return value
    return None
