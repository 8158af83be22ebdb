"""The security schemes of `svcc openapi`: which guards are authentication, and how a client
passes its credentials (docs/reference/commands.md, "svcc openapi").

An auth guard is a guard that can answer 401: an `unauthorized` error among the kinds its
call graph can make (check/error_kinds.py). Its scheme is read from the credentials it
reads, first found in this order anywhere in its call graph: `header(h, "authorization")` is
an HTTP bearer scheme (`bearer`); `cookie(h, "name")` an API key in that cookie
(`cookie_<name>`); `header(h, "x-api-key")` or another literal field name an API key in that
header field (`header_<name>`); none of these (the name is computed), a bearer scheme. A route
behind auth guards lists their schemes as one security requirement (all of them apply).
"""

from __future__ import annotations

import re
from typing import Any

from svc.compiler.check.error_kinds import error_kinds, reachable_calls
from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram, RouteInfo

BEARER = "bearer"


def guard_kinds(program: CheckedProgram, route: RouteInfo) -> frozenset[str]:
    """The error kinds the route's guards can answer with."""
    kinds: frozenset[str] = frozenset()
    for use in route.guards:
        kinds |= error_kinds(program, use.guard)
    return kinds


def scheme_of(program: CheckedProgram, guard: str) -> tuple[str, dict[str, Any]] | None:
    """(component name, security scheme) of an auth guard; None for another guard."""
    if "unauthorized" not in error_kinds(program, guard):
        return None
    cookies: list[str] = []
    fields: list[str] = []
    for call in reachable_calls(program, guard):
        if call.call_kind != "builtin" or call.target not in ("header", "cookie"):
            continue
        if len(call.args) < 2 or not isinstance(call.args[1], syntax.StrLit):
            continue
        text = call.args[1].value
        if call.target == "header" and text.lower() == "authorization":
            return BEARER, {"type": "http", "scheme": "bearer"}
        (cookies if call.target == "cookie" else fields).append(text)
    if cookies:
        return _key("cookie", cookies[0]), {"type": "apiKey", "in": "cookie", "name": cookies[0]}
    if fields:
        return _key("header", fields[0]), {"type": "apiKey", "in": "header", "name": fields[0]}
    return BEARER, {"type": "http", "scheme": "bearer"}


def _key(where: str, name: str) -> str:
    """A component name OpenAPI allows (`^[a-zA-Z0-9._-]+$`)."""
    return f"{where}_" + re.sub(r"[^A-Za-z0-9._-]", "_", name)


def route_security(program: CheckedProgram, route: RouteInfo) -> dict[str, dict[str, Any]]:
    """The schemes of the route's auth guards, by component name, in guard order."""
    schemes: dict[str, dict[str, Any]] = {}
    for use in route.guards:
        found = scheme_of(program, use.guard)
        if found is not None:
            schemes.setdefault(found[0], found[1])
    return schemes


def security_schemes(program: CheckedProgram) -> dict[str, dict[str, Any]]:
    """Every auth guard's scheme used by some route: `components.securitySchemes`."""
    schemes: dict[str, dict[str, Any]] = {}
    for route in program.routes:
        schemes.update(route_security(program, route))
    return schemes
