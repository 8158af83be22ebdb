"""A whole client: one self-contained ES module, the same text for the same program.

A header naming svcc's version and the program; the types the routes expose (TypeScript
only); the fixed runtime; and `createClient(baseUrl, options)`, whose object has one function
per route. Nothing is imported: a browser's `<script type="module">` or Node 20 runs it with
its own fetch (and WebSocket, for WebSocket routes: Node 22 has one, Node 20 takes one in
the options).
"""

from __future__ import annotations

from svc import __version__
from svc.compiler.program import CheckedProgram
from svc.rules.contract import ParamSource
from svc.tools.client.routes import error_types, route_functions
from svc.tools.client.runtime import runtime
from svc.tools.client.typescript import declarations

LANGUAGES = ("ts", "js")


def client_module(program: CheckedProgram, name: str, lang: str) -> str:
    """The client of `program` (called `name` in the header) in `lang`, "ts" or "js"."""
    typed = lang == "ts"
    streams = [None if s is None else s.source for s in (r.stream for r in program.routes)]
    parts = [_header(name, lang, ParamSource.SOCKET in streams)]
    if typed:
        parts += declarations(program)
    parts.append(runtime(typed, None in streams, ParamSource.EVENTS in streams,
                         ParamSource.SOCKET in streams))
    if typed:
        parts += error_types(program)
    parts.append(_create_client(program, typed))
    return "\n".join(parts)


def _header(name: str, lang: str, sockets: bool) -> str:
    language = "TypeScript" if lang == "ts" else "JavaScript"
    needs = "fetch and WebSocket" if sockets else "fetch"
    return (f"// The {language} client of the HTTP API of {name}, made by svcc {__version__} "
            f"(svcc client --lang {lang}).\n"
            f"// Do not edit: make it again when the program changes. It needs only {needs}.\n")


def _create_client(program: CheckedProgram, typed: bool) -> str:
    functions = "".join(route_functions(program, typed))
    signature = ("baseUrl: string, options: SvcClientOptions = {}" if typed
                 else "baseUrl, options = {}")
    return ("/** The API at `baseUrl` (\"http://127.0.0.1:8080\", or \"\" for the page's "
            "own\n * server): one function per route. */\n"
            f"export function createClient({signature}) {{\n"
            f"  return {{\n{functions}  }};\n}}\n")
