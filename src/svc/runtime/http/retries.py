"""Running a handler again when the database rolled its transaction back for clashing with
another one (a deadlock, a serialization failure, a lock not released in time).

Such a rollback left nothing behind in the database, so a handler that did nothing else
before it (no outbound call, no job enqueued outside the transaction, no log line, no second
transaction: the compiler proves it, svc.compiler.effects) can simply run again, and will
usually succeed: the transaction it clashed with has ended meanwhile. The compiler marks
those routes (`Route.retried`); only their requests go through `run_retried`
(answers.StartRetried), so no other route pays for it.

A run again starts after a short pause, doubling each time and jittered (two clashing
requests that paused equally would clash again), and only while enough of the processing
limit is left for another run; each is one warning line in the log. The last clash's 503 is
the answer when time runs out. The arguments are bound again from the request for each run,
since a run may have changed the values it was given.
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

from svc.runtime.db.lock_waits import retried_var
from svc.runtime.http.binding import BindError
from svc.runtime.http.context import request_deadline_var
from svc.runtime.lib.support import SvcError

if TYPE_CHECKING:
    from svc.runtime.http.connection import Connection
    from svc.runtime.http.protocol import Request
    from svc.runtime.http.routing import CompiledRoute

#: The first pause before running again, in seconds; each later one doubles, up to the most.
FIRST_PAUSE_SECONDS = 0.005
MOST_PAUSE_SECONDS = 0.1
#: A run again starts only with this much of the processing limit left after its pause:
#: a run cut off by the limit would turn an honest 503 into a 504.
RESERVE_SECONDS = 0.25


def pause_before(attempt: int) -> float:
    """The pause before run `attempt + 1` (attempt 1 is the first run again): doubling, with
    ±50% jitter."""
    base = min(FIRST_PAUSE_SECONDS * 2 ** (attempt - 1), MOST_PAUSE_SECONDS)
    return base * random.uniform(0.5, 1.5)


async def run_retried(conn: Connection, req: Request, route: CompiledRoute,
                      captures: tuple[bytes, ...], args: Any) -> Any:
    """The handler's outcome, running it again after each clash while time is left."""
    loop = conn.loop
    attempt = 0
    retried_var.set(True)  # short lock waits (db/lock_waits.py): starting over is cheap here
    while True:
        outcome = await route.handler(*args)
        if outcome.__class__ is not SvcError or not outcome.retry:
            return outcome
        attempt += 1
        pause = pause_before(attempt)
        deadline = request_deadline_var.get()
        if deadline is None or deadline - loop.time() < pause + RESERVE_SECONDS:
            return outcome
        conn.app.log.request_warning(
            req, route, f"running the handler again (run {attempt + 1}) after {outcome.kind} "
                        f"error: {outcome.message}")
        await asyncio.sleep(pause)
        try:
            args = route.arguments(captures, req, conn.app.db)
        except BindError:  # pragma: no cover - the same request bound the first time
            return outcome
