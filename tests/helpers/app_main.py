"""The `__main__` of the test apps written as generated code would be (events_app.py,
sockets_app.py, upload_app.py): serve their routes on the port named by the first argument
(0: any free one), on uvloop where installed as a server runs, until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import sys

try:
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None

from svc.rules.contract import Route
from svc.runtime.http.server import serve
from svc.runtime.lib.support import SvcError


async def _serve(port: int, routes: list[Route]) -> int:
    outcome = await serve(None, port, routes)
    if isinstance(outcome, SvcError):
        print(f"error: {outcome.message}", file=sys.stderr)
        return 1
    return 0


def run_app(routes: list[Route]) -> None:
    """Serve `routes` and exit with the server's status."""
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    run = asyncio.run if uvloop is None else uvloop.run
    sys.exit(run(_serve(port, routes)))
