"""`svcc routes FILE|--project DIR`: the route table as the server serves it.

One line per route of the program, in table order: method, path, handler and the guards the
route runs, in the order they run (a prefix guard with the prefix it comes from, and its
methods when it guards only some), through the
same check as every command (`svc.pipeline.check`), so what it prints is what `svcc run`
serves. The server's built-in routes come first, marked `(built-in)`.
"""

from __future__ import annotations

import sys

from svc.compiler.check.routes import RESERVED_PATHS
from svc.compiler.program import CheckedProgram, GuardUse, RouteInfo

#: The built-in routes `[server] demo_routes = false` leaves out (runtime/http/builtin_routes.py).
DEMO_PATHS = ("/stream", "/ws")


def guard_text(use: GuardUse) -> str:
    """`require_user` for `@guard`, `require_user (prefix /admin)` for a prefix's, and
    `can_write (prefix /items, POST DELETE)` for a prefix's with `methods=[...]`."""
    if use.prefix is None:
        return use.guard
    methods = "".join(f" {method}" for method in use.methods)
    return f"{use.guard} (prefix {use.prefix}{',' if methods else ''}{methods})"


def route_line(route: RouteInfo) -> tuple[str, str, str, str]:
    guards = ", ".join(guard_text(g) for g in route.guards) or "-"
    return route.method, route.path, route.handler, guards


def table(program: CheckedProgram) -> str:
    """The table's text: a header line, the built-in routes, then the program's."""
    rows = [("METHOD", "PATH", "HANDLER", "GUARDS")]
    rows += [("GET", path, "(built-in)", "-") for path in RESERVED_PATHS
             if program.settings.demo_routes or path not in DEMO_PATHS]
    rows += [route_line(r) for r in program.routes]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "".join(f"{m:<{widths[0]}}  {p:<{widths[1]}}  {h:<{widths[2]}}  {g}".rstrip() + "\n"
                   for m, p, h, g in rows)


def routes_command(file: str | None, project: str | None) -> int:
    """Check the program, then print its route table: 0, or 1 with its diagnostics."""
    from svc import pipeline
    from svc.compiler.diagnostics import render_all

    checked = pipeline.check(pipeline.Target(file=file, project=project))
    if isinstance(checked, pipeline.Failed):
        print(render_all(checked.diagnostics, checked.sources), file=sys.stderr)
        return 1
    sys.stdout.write(table(checked.program))
    return 0
