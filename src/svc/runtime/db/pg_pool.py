"""The pool of PostgreSQL connections behind a `PostgresDb`: asyncpg connections, handed out
one caller at a time.

asyncpg's own Pool costs about as much CPU per borrowed connection as the statement itself
(measured in bench/PERF.md: a wrapping proxy per borrow, a Task per release through
`asyncio.shield`, a queue, an inactivity timer re-armed on every release). svc needs much
less of it, so this pool is a list of idle connections and a queue of waiting callers:

- `take()` is the common case, without a suspension: an idle connection (the most recently
  used first), or None. `acquire()` waits for one: it connects a new one while the pool has
  fewer than `max_size`, else waits in arrival order for one to be given back.
- `give_back(conn)` hands the connection to the first caller still waiting, else keeps it
  idle. A connection that is closed (its server went away) is dropped, and its place lets a
  waiting caller connect anew. One left inside a transaction (a BEGIN through db_exec) is
  rolled back first; one whose statement was given up on mid-way settles in the background
  (`give_back_later`) and is closed if it does not.
- Connections idle for a whole sweep period (60 s) are closed, so an idle server holds no
  sessions: the pool keeps no floor of open connections.
"""

from __future__ import annotations

import asyncio
from collections import deque

from svc.runtime.observability import metrics

#: Seconds between sweeps of idle connections; one unused for a whole period is closed.
IDLE_SECONDS = 60.0
#: Seconds a connection whose statement was given up on may take to settle (the server
#: confirming the cancellation) before it is closed instead of reused.
SETTLE_SECONDS = 5.0


class PoolClosed(ConnectionError):
    """The pool was closed (server shutdown) while a caller waited for a connection."""


class Pool:
    """At most `max_size` asyncpg connections to one URL, made as needed."""

    __slots__ = ("url", "max_size", "connect", "idle", "size", "waiters", "closed", "loop",
                 "statements", "_everyone", "_untouched", "_sweep", "_chores")

    def __init__(self, url: str, max_size: int, connect) -> None:
        """`connect()` makes one connection (an awaitable); it raises when it cannot."""
        self.url = url
        self.max_size = max_size
        self.connect = connect
        self.idle: list = []  # a stack: the last given back is the next taken
        self.size = 0  # connections open or being opened
        self.waiters: deque[asyncio.Future] = deque()
        self.closed = False
        self.loop = asyncio.get_running_loop()
        self.statements: dict = {}  # connection -> {SQL text: its prepared statement there}
        self._everyone: set = set()  # every open connection, idle or lent (to terminate them)
        self._untouched = 0  # the bottom of `idle` not taken since the last sweep
        self._sweep: asyncio.TimerHandle | None = None
        self._chores: set = set()  # background settling and rollbacks, kept referenced

    # --- borrowing ----------------------------------------------------------------------------

    def take(self):
        """An idle open connection, or None (then `acquire` waits for one)."""
        idle = self.idle
        while idle:
            conn = idle.pop()
            if len(idle) < self._untouched:
                self._untouched = len(idle)
            if not conn.is_closed():
                return conn
            self._drop(conn)
        return None

    async def acquire(self):
        """A connection: an idle one, a new one, or the next one given back."""
        while True:
            if self.closed:
                raise PoolClosed("the pool is closed")
            conn = self.take()
            if conn is not None:
                return conn
            if self.size < self.max_size:
                return await self._open()
            waiter = self.loop.create_future()
            self.waiters.append(waiter)
            since = self.loop.time()
            try:
                conn = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    self._pass_on(waiter.result())  # handed over as it was cancelled
                raise
            metrics.db_waited(metrics.database_label(self.url), self.loop.time() - since)
            if conn is not None:
                return conn
            # None: a place was freed (a connection dropped); loop to open one

    async def _open(self):
        self.size += 1
        try:
            conn = await self.connect()
        except BaseException:
            self.size -= 1
            self._wake_one(None)  # a waiter may try in this place
            raise
        if self.closed:
            conn.terminate()
            self.size -= 1
            raise PoolClosed("the pool is closed")
        self._everyone.add(conn)
        if self._sweep is None:
            self._sweep = self.loop.call_later(IDLE_SECONDS, self._sweep_idle)
        return conn

    # --- giving back --------------------------------------------------------------------------

    def give_back(self, conn) -> None:
        """The connection is free again: to the first waiter, else idle."""
        if self.closed or conn.is_closed():
            self._drop(conn)
        elif conn.is_in_transaction():
            self._chore(self._roll_back(conn))
        elif not self._wake_one(conn):
            self.idle.append(conn)

    def _pass_on(self, value) -> None:
        """What a cancelled waiter was handed: a connection goes back, a free place
        (None) goes to the next waiter."""
        if value is None:
            self._wake_one(None)
        else:
            self.give_back(value)

    def give_back_later(self, conn) -> None:
        """A connection whose statement was cancelled: asyncpg asks the server to cancel it,
        and the connection is usable once the server confirmed. Wait for that in the
        background (a trivial query waits for it), then give it back; close it if the
        server does not confirm in time (a frozen server), which also ends asyncpg's
        cancellation request."""
        self._chore(self._settle(conn))

    def discard(self, conn) -> None:
        """Close a connection whose state is unknown; its place is free again."""
        conn.terminate()
        self._drop(conn)

    async def _settle(self, conn) -> None:
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                await conn.fetchval("SELECT 1")
        except (Exception, asyncio.CancelledError):
            self.discard(conn)
            return
        self.give_back(conn)

    async def _roll_back(self, conn) -> None:
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                await conn.execute("ROLLBACK")
        except (Exception, asyncio.CancelledError):
            self.discard(conn)
            return
        self.give_back(conn)

    def _chore(self, coro) -> None:
        task = self.loop.create_task(coro)
        self._chores.add(task)
        task.add_done_callback(self._chores.discard)

    def _drop(self, conn) -> None:
        self.statements.pop(conn, None)
        if conn in self._everyone:
            self._everyone.discard(conn)
            self.size -= 1
            self._wake_one(None)
        if not conn.is_closed():
            conn.terminate()

    def _wake_one(self, value) -> bool:
        """Hand `value` (a connection, or None for a free place) to the first caller still
        waiting; False when nobody waits."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(value)
                return True
        return False

    # --- idle connections and closing -------------------------------------------------------

    def _sweep_idle(self) -> None:
        """Close the idle connections nobody took since the last sweep (the bottom of the
        stack); sweep again later while any connection is open."""
        self._sweep = None
        if self.closed:
            return
        unused, self.idle = self.idle[:self._untouched], self.idle[self._untouched:]
        for conn in unused:
            self._drop(conn)
        self._untouched = len(self.idle)
        if self.size:
            self._sweep = self.loop.call_later(IDLE_SECONDS, self._sweep_idle)

    def terminate(self) -> None:
        """Close every connection now, lent ones included (their servers roll back); callers
        still waiting get `PoolClosed`. Connections given back later are closed."""
        self.closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        everyone, self._everyone = self._everyone, set()
        self.statements = {}
        self.idle = []
        self.size = 0
        for conn in everyone:
            conn.terminate()
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_exception(PoolClosed("the pool is closed"))
