"""The allowed names in a request body's bad enum value (error path only).

msgspec reports a JSON string that is not a member of an enum (a `Literal` of member names)
as "Invalid enum value 'x' - at `$.role`", without the names it would have taken. This finds
the enum at that path in the body's type and names them, so a client reads what to send. It
runs only when decoding failed: a body that decodes pays nothing.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[([^\]]*)\]")
_AT = re.compile(r" - at `(\$[^`]*)`\Z")


def with_allowed_names(message: str, body_type: Any) -> str:
    """`message` with "; expected one of a, b" when it is about an enum value."""
    at = _AT.search(message)
    if not message.startswith("Invalid enum value") or at is None:
        return message
    try:
        info = _at_path(msgspec.inspect.type_info(body_type), at.group(1)[1:])
    except Exception:  # a path this walk does not follow: the message as msgspec wrote it
        return message
    if not isinstance(info, msgspec.inspect.LiteralType):
        return message
    names = ", ".join(str(v) for v in info.values)
    return f"{message[:at.start()]} (expected one of {names}){message[at.start():]}"


def _at_path(info: Any, path: str) -> Any:
    for step in _STEP.finditer(path):
        info = _unwrap(info)
        if step.group(1) is not None:
            info = next(f.type for f in info.fields if f.encode_name == step.group(1))
        elif isinstance(info, msgspec.inspect.DictType):
            info = info.value_type
        else:
            info = info.item_type
    return _unwrap(info)


def _unwrap(info: Any) -> Any:
    """The type inside `T?` (a union with None) and inside an annotated or metadata type."""
    while True:
        if isinstance(info, msgspec.inspect.UnionType):
            rest = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
            if len(rest) != 1:
                return info
            info = rest[0]
        elif isinstance(info, msgspec.inspect.Metadata):
            info = info.type
        else:
            return info
