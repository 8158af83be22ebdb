"""CORS decisions, as pure functions of svc.toml's `[cors]` settings and a request's fields.

Browsers enforce CORS; the server only says what it allows (the Fetch standard's "CORS
protocol"). Two kinds of request reach these functions:

- a *preflight*: `OPTIONS` with `Origin` and `Access-Control-Request-Method` (and maybe
  `Access-Control-Request-Headers`), which a browser sends before a request that is not
  "simple" (a JSON body, a custom header, a method other than GET/HEAD/POST). `preflight`
  answers it: the `Access-Control-Allow-*` fields when the origin, the method and every
  header are allowed, or the reason it is refused (the server answers 403 without those
  fields, and the browser's fetch fails).
- any other request with an `Origin` (`actual_fields`): an allowed origin gets
  `Access-Control-Allow-Origin` (the origin itself, or `*` when any origin is allowed and no
  credentials are), `Access-Control-Allow-Credentials`, `Access-Control-Expose-Headers`. The
  request is served either way: a disallowed origin only gets no such fields, so the browser
  keeps the answer from the page.

The allowed method and headers are answered by echoing the ones the browser asked for (once
checked): with credentials a `*` in those fields is not a wildcard (it names a header `*`),
and `*` never covers `Authorization`, so echoing is the form that works in every case.
Every answer that depends on the origin says `Vary: Origin`, so that a cache keeps apart the
answers meant for different origins.
"""

from __future__ import annotations

import re

from svc.rules.traffic import CorsSettings

#: What a preflight's answer varies by.
PREFLIGHT_VARY = b"Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers\r\n"
VARY_ORIGIN = b"Vary: Origin\r\n"
#: A header name (RFC 9110's token): what may be echoed back in Access-Control-Allow-Headers.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9a-z]+", re.ASCII)


class Cors:
    """`[cors]` settings with the fixed parts of every answer prepared once."""

    def __init__(self, settings: CorsSettings) -> None:
        self.settings = settings
        self.any_origin = settings.origins == ("*",)
        self.origins = frozenset(settings.origins)
        self.any_method = settings.methods == ("*",)
        self.methods = frozenset(settings.methods)
        self.any_header = settings.headers == ("*",)
        self.headers = frozenset(settings.headers)
        #: `*` for any origin (never with credentials: svc.rules.traffic refuses that)
        self.wildcard = self.any_origin and not settings.credentials
        tail = b""
        if settings.credentials:
            tail += b"Access-Control-Allow-Credentials: true\r\n"
        self.preflight_tail = tail + (b"Access-Control-Max-Age: %d\r\n" % settings.max_age
                                      if settings.max_age is not None else b"")
        if settings.expose:
            tail += b"Access-Control-Expose-Headers: " + ", ".join(settings.expose).encode() \
                + b"\r\n"
        self.actual_tail = tail
        #: the fields of an answer to a request from an allowed origin, when they do not
        #: depend on the origin (any origin allowed, no credentials)
        self.wildcard_fields = b"Access-Control-Allow-Origin: *\r\n" + tail

    def allows_origin(self, origin: str) -> bool:
        return self.any_origin or origin in self.origins

    def allow_origin_field(self, origin: str) -> bytes:
        shown = b"*" if self.wildcard else origin.encode("latin-1")
        return b"Access-Control-Allow-Origin: " + shown + b"\r\n"


def is_preflight(method: str, origin: bytes | None, request_method: bytes | None) -> bool:
    """A CORS preflight: OPTIONS with both Origin and Access-Control-Request-Method."""
    return method == "OPTIONS" and origin is not None and request_method is not None


def actual_fields(cors: Cors, origin: bytes | None) -> bytes:
    """The header fields of an answer to a request that is not a preflight (b"" without an
    `Origin`, except `Vary: Origin` when the answer depends on it)."""
    if cors.wildcard:
        return cors.wildcard_fields if origin is not None else b""
    if origin is None:
        return VARY_ORIGIN
    text = origin.decode("latin-1")
    if not cors.allows_origin(text):
        return VARY_ORIGIN
    return cors.allow_origin_field(text) + cors.actual_tail + VARY_ORIGIN


def preflight(cors: Cors, origin: bytes, request_method: bytes,
              request_headers: bytes | None) -> tuple[bool, bytes | str]:
    """`(True, the answer's header fields)` for an allowed preflight, else `(False, why)`: the
    reason for the refusal's body (naming what is not allowed)."""
    text = origin.decode("latin-1")
    if not cors.allows_origin(text):
        return False, f"CORS: the origin {text} is not allowed"
    method = request_method.decode("latin-1").strip()
    if not cors.any_method and method not in cors.methods:
        return False, f"CORS: the method {method} is not allowed"
    names = header_names(request_headers)
    for name in names:
        if not cors.any_header and name not in cors.headers or not _TOKEN.fullmatch(name):
            return False, f"CORS: the header {name} is not allowed"
    fields = cors.allow_origin_field(text) + b"Access-Control-Allow-Methods: " \
        + method.encode("latin-1") + b"\r\n"
    if names:
        fields += b"Access-Control-Allow-Headers: " + ", ".join(names).encode("latin-1") + b"\r\n"
    return True, fields + cors.preflight_tail + PREFLIGHT_VARY


def header_names(value: bytes | None) -> list[str]:
    """`Access-Control-Request-Headers`' names, in lower case (the browser sends them so,
    comma-separated and sorted; any spacing is accepted)."""
    if not value:
        return []
    names = (part.strip().lower() for part in value.decode("latin-1").split(","))
    return [name for name in names if name]
