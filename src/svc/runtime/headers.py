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


def values(h: Headers, name: str) -> list[str]:
    """Every value of the fields named `name` (any case), in the order received."""
    wanted = name.lower().encode("utf-8", "replace")
    return [_text(value.strip(b" \t")) for key, value in h.fields if key.lower() == wanted]


def header(h: Headers, name: str) -> str | None:
    """`header(h, name)`: the field's value; several fields of one name joined with ", "
    (RFC 9110 §5.3); None when the request has no such field."""
    found = values(h, name)
    if not found:
        return None
    return found[0] if len(found) == 1 else ", ".join(found)


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
