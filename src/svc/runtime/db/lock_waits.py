"""How long a PostgreSQL statement may wait for a lock another transaction holds.

Without a bound, a transaction that waits on another's row lock waits until the other ends,
and two that lock the same rows in opposite orders wait until PostgreSQL's deadlock check
(1 s by default) rolls one back: under contention every request queued behind such a pair
reaches its processing limit. So every connection starts with `lock_timeout` set to
`LOCK_WAIT_MS`, 15% of the processing limit (in the startup packet: no round trip),
and a wait that passes it fails with SQLSTATE 55P03, which errors.py answers as `busy`
"a lock held by another transaction was not released in time; retry it", marked `retry`
inside a transaction.

A handler that the runtime runs again after a clash (svc.runtime.http.retries) waits far less,
`RETRIED_LOCK_WAIT_MS`, set with its BEGIN: for it, starting over beats waiting.

A statement of a transaction late in its request could still wait past the processing limit,
where the request would give up without saying why. `wait_to_set` lowers the transaction's
bound to a third of the time the request has left (`SET LOCAL`: it ends with the
transaction; a statement may wait several times), at the cost of one round trip, only for a
statement that starts with less than three times its bound left.

Work that must wait for a lock as long as it takes (migrations and the job tables taking
their advisory lock at start-up) sets `WAIT_FOREVER` in its own transaction.
"""

from __future__ import annotations

from contextvars import ContextVar

from svc.rules.contract import PROCESSING_LIMIT
from svc.runtime.db.pg_deadline import MARGIN_SECONDS, SWEEP_SECONDS
from svc.runtime.http.context import request_deadline_var

#: A lock wait's bound on every connection, in milliseconds: 300 for the 2 s limit, so that a
#: statement's few waits (WAITS_PER_STATEMENT) fit in the limit with room to spare.
LOCK_WAIT_MS = int(PROCESSING_LIMIT * 1000) * 3 // 20
#: A lock wait's bound in the transactions of a handler the runtime runs again after a clash:
#: waiting is worse than starting over there. Two transactions that lock the same rows in
#: opposite orders wait for each other until one gives up, and every transaction queued
#: behind them waits as long; starting over after a short, jittered pause lets them through
#: (measured on the ledger workload of bench/contention.py: 10 ms took 300 transfers through
#: in 1.4 s, 20 ms in 2.9 s, 50 ms in 5.5 s, 500 ms in 15 s).
RETRIED_LOCK_WAIT_MS = 10
#: BEGIN and that bound, in one simple-protocol message (one round trip).
BEGIN_RETRIED = f"BEGIN; SET LOCAL lock_timeout = {RETRIED_LOCK_WAIT_MS}"
#: True while a request of a `retried` route runs (set in its own context).
retried_var: ContextVar[bool] = ContextVar("svc_retried", default=False)
#: What each new connection is told (asyncpg's `server_settings`).
SERVER_SETTINGS = {"lock_timeout": str(LOCK_WAIT_MS)}
#: The statement a transaction runs first when it may wait for a lock without a bound.
WAIT_FOREVER = "SET LOCAL lock_timeout = 0"
#: `lock_timeout` bounds each lock wait, and one statement may wait several times: an UPDATE of
#: a row others are updating waits for the row's lock, then for the transaction holding it,
#: and again if the row changed meanwhile. Lowered near the limit, the bound leaves room for
#: this many.
WAITS_PER_STATEMENT = 3
#: A lock wait ends this long before the request gives up on the statement (pg_deadline.py's
#: margin and sweep, and 50 ms for the error to come back), so that the wait, not the
#: processing limit, is what the answer reports.
_BEFORE_GIVING_UP = MARGIN_SECONDS + SWEEP_SECONDS + 0.05


def begin() -> tuple[str, int]:
    """How a transaction begins, and the bound of its lock waits: a handler that is run again
    after a clash (svc.runtime.http.retries sets `retried_var`) waits `RETRIED_LOCK_WAIT_MS`,
    set in the same round trip as BEGIN; any other, the connection's `LOCK_WAIT_MS`."""
    if retried_var.get():
        return BEGIN_RETRIED, RETRIED_LOCK_WAIT_MS
    return "BEGIN", LOCK_WAIT_MS


def wait_to_set(now: float, current_ms: int) -> int | None:
    """For a transaction's next statement at loop time `now`, whose bound is `current_ms`:
    the lower bound to set first (milliseconds, at least 1), or None to keep it (no request
    deadline, or time enough left)."""
    deadline = request_deadline_var.get()
    if deadline is None:
        return None
    left_ms = int((deadline - now - _BEFORE_GIVING_UP) * 1000)
    if left_ms >= current_ms * WAITS_PER_STATEMENT:
        return None
    return max(left_ms // WAITS_PER_STATEMENT, 1)


def set_local(ms: int) -> str:
    return f"SET LOCAL lock_timeout = {int(ms)}"
