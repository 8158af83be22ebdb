"""Fan-out between the processes on one SQLite file (`SVC_WORKERS`, several servers on one
machine): a table every process appends to and polls while it has subscribers.

SQLite has no LISTEN/NOTIFY, so this does what Rails' Solid Cable does on databases without
one: a publish inserts a row into `svc_topic_events`, and each process with subscribers reads
the rows past the last id it saw, every `POLL_SECONDS` (50 ms). Why it works on SQLite:

- One writer at a time, and ids from AUTOINCREMENT (never reused, even after every row was
  pruned): a row a poll can see has a larger id than every row committed before it, so
  reading "past the last id" never skips a committed row. (PostgreSQL commits out of id
  order; it uses NOTIFY instead: postgres_bus.py.)
- WAL journaling (every file `Db` opens it so, svc.runtime.db.sqlite): the polls read without
  blocking the writers, and the writers do not block them.
- Everything goes through the program's own `Db` (its thread, its queue of jobs, its
  connection), not a second SQLite layer: one statement per batch of publishes, one per poll.
- A batch is ONE statement text whatever its size: the payloads go as one blob (cut apart by
  `substr` at the offsets a JSON array gives, rows inserted in publish order). A statement
  keeps the copies of its last arguments while it sits in the connection's statement cache,
  so a multi-row INSERT per batch size held up to 256 batches of payloads (measured: +61 MiB
  of RSS after 800 publishes of 64 KiB); one shape holds one batch, of at most
  `SEND_BATCH_BYTES`.

Choices: a process polls only while it has subscribers, so idle processes cost nothing; when
it starts polling it begins at the newest row (what was published before it subscribed is
not news), and `live()` returns once it has that starting point, so a subscription made
with `await subscribe(...)` gets every message published after it returns. 50 ms is a
latency a person watching a page does not notice, for 20 small indexed reads a second per
process. Rows older than `KEEP_MS` (a minute) are deleted by the publishers, at most every
`PRUNE_SECONDS`: a process that polls sees a row within a poll of its insert, so a minute is
far more than any reader needs, and the table stays small.

The table is the runtime's and its rows live a minute: if its shape ever changes, the new
shape gets a new table name, so processes of two svc versions on one file never read each
other's rows wrongly (no version bookkeeping is needed for rows nobody keeps).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time

from svc.runtime.db.base import ALL, EXEC, ONE, SCRIPT, Db
from svc.runtime.lib.support import SvcError
from svc.runtime.topics.hub import BURST, Hub
from svc.runtime.topics.notices import Outage
from svc.runtime.topics.order import Arrivals
from svc.runtime.topics.outbox import Outbox

#: How often a process with subscribers looks for new rows.
POLL_SECONDS = 0.05
#: Rows older than this are deleted.
KEEP_MS = 60_000
#: How often a publishing process deletes old rows, at most.
PRUNE_SECONDS = 5.0
#: Publishes per INSERT statement, and bytes of their payloads (a larger message goes alone).
SEND_BATCH = 1000
SEND_BATCH_BYTES = 2**20
#: Rows per poll; a poll that fills it polls again at once.
READ_BATCH = 1000

TABLE = """
CREATE TABLE IF NOT EXISTS svc_topic_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  publisher TEXT NOT NULL,
  seq INTEGER NOT NULL,
  topic TEXT NOT NULL,
  body BLOB NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS svc_topic_events_at ON svc_topic_events (at);
"""
#: ?2 is a JSON array of [seq, topic, offset, length] per message, ?4 their payloads end to end.
_INSERT = ("INSERT INTO svc_topic_events (publisher, seq, topic, body, at) "
           "SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
           "substr(?4, json_extract(value, '$[2]'), json_extract(value, '$[3]')), ?3 "
           "FROM json_each(?2) ORDER BY key")
_NEWEST = "SELECT COALESCE(MAX(id), 0) AS id FROM svc_topic_events"
#: Rows past ?1, this process's own without their body (it never delivers its own echo).
_READ = ("SELECT id, publisher, seq, topic, CASE WHEN publisher = ?2 THEN NULL ELSE body END "
         "AS body FROM svc_topic_events WHERE id > ?1 ORDER BY id LIMIT ?3")
_PRUNE = "DELETE FROM svc_topic_events WHERE at < ?1"


class _Newest:
    """The row mapper fills classes by their `__svc_fields__` (svc.runtime.db.rows)."""

    __svc_fields__ = (("id", "i64", False),)
    __slots__ = ("id",)

    def __init__(self, id: int) -> None:  # noqa: A002 - the column's name
        self.id = id


class _Event:
    __svc_fields__ = (("id", "i64", False), ("publisher", "str", False), ("seq", "i64", False),
                      ("topic", "str", False), ("body", "bytes", True))
    __slots__ = ("id", "publisher", "seq", "topic", "body")

    def __init__(self, id: int, publisher: str, seq: int, topic: str,  # noqa: A002
                 body: bytes | None) -> None:
        self.id = id
        self.publisher = publisher
        self.seq = seq
        self.topic = topic
        self.body = body


class SqliteBus:
    """This process's side of the table: one task sending, one polling while it is wanted."""

    def __init__(self, db: Db, hub: Hub, publisher: str, context: contextvars.Context) -> None:
        self.db = db
        self.hub = hub
        self.publisher = publisher
        self._context = context  # the service starter's: tasks never inherit a request's
        self._wake = asyncio.Event()
        self.outbox = Outbox(self._wake.set)
        self.arrivals = Arrivals()
        self.sending = Outage("from this process to the others on this SQLite file")
        self.reading = Outage("from the other processes on this SQLite file to this one")
        self.received = 0  # messages of other processes delivered here
        self._sender: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._polling: asyncio.Future[None] | None = None  # done once the poller has begun
        self._pruned_at = 0.0

    @property
    def up(self) -> bool:
        return not (self.sending.is_down or self.reading.is_down)

    async def start(self) -> None | SvcError:
        """Make the table where missing and start sending."""
        made = await self.db._submit(SCRIPT, TABLE, (), None)
        if isinstance(made, SvcError):
            return SvcError(made.kind, f"cannot make the topics table: {made.message}")
        self.outbox.open = True
        self._sender = asyncio.get_running_loop().create_task(self._send(),
                                                              context=self._context)
        return None

    def send(self, topic: str, payload: bytes) -> None:
        self.outbox.put(topic, payload)

    async def live(self) -> None:
        """Return once this process reads what the others publish from now on."""
        task = self._poller
        if task is None or task.done():
            loop = asyncio.get_running_loop()
            self._polling = loop.create_future()
            self._poller = loop.create_task(self._poll(self._polling), context=self._context)
        assert self._polling is not None
        await asyncio.shield(self._polling)

    def stop(self) -> None:
        """Stop both tasks now; what was not sent is lost."""
        self.outbox.close()
        for task in (self._sender, self._poller):
            if task is not None:
                task.cancel()
        if self._polling is not None and not self._polling.done():
            self._polling.set_result(None)

    def tasks(self) -> list[asyncio.Task[None]]:
        return [task for task in (self._sender, self._poller) if task is not None]

    @property
    def missed(self) -> int:
        """Messages of other processes this one never saw (numbers skipped)."""
        return self.arrivals.missed

    def forget_after_fork(self) -> list[object]:
        """In a worker just forked: the parent's tasks, left untouched (the caller keeps
        them referenced); the database handle was reopened by svc.runtime.db already."""
        held: list[object] = list(self.tasks())
        self._sender = self._poller = None
        return held

    # --- sending ------------------------------------------------------------------------------

    async def _send(self) -> None:
        outbox, wake = self.outbox, self._wake
        while True:
            await wake.wait()
            wake.clear()
            while outbox.items:
                await self._insert(outbox.take(SEND_BATCH, SEND_BATCH_BYTES))
            if time.monotonic() - self._pruned_at > PRUNE_SECONDS:
                await self._prune()

    async def _insert(self, batch: list[tuple[int, str, bytes]]) -> None:
        now = int(time.time() * 1000)
        rows, offset = [], 1
        for seq, topic, payload in batch:
            rows.append((seq, topic, offset, len(payload)))
            offset += len(payload)
        args = (self.publisher, json.dumps(rows), now, b"".join(p for _, _, p in batch))
        done = await self.db._submit(EXEC, _INSERT, args, None)
        if isinstance(done, SvcError):
            self.outbox.lost += len(batch)
            self.sending.down(f"the database refused the insert: {done.message}",
                              time.monotonic())
        else:
            self.sending.up(time.monotonic())

    async def _prune(self) -> None:
        self._pruned_at = time.monotonic()
        await self.db._submit(EXEC, _PRUNE, (int(time.time() * 1000) - KEEP_MS,), None)

    # --- reading ------------------------------------------------------------------------------

    async def _poll(self, polling: asyncio.Future[None]) -> None:
        """Read new rows every POLL_SECONDS while this process has subscribers."""
        last: int | None = None
        try:
            while True:
                if last is None:
                    newest = await self.db._submit(ONE, _NEWEST, (), _Newest)
                    if isinstance(newest, _Newest):
                        last = newest.id
                    else:
                        self._failed(newest)
                    if not polling.done():  # subscribe returns even when the file fails
                        polling.set_result(None)
                if last is not None:
                    last, full = await self._read(last)
                    if full:
                        continue
                if not self.hub.subscribed:
                    return  # the next subscriber starts polling anew, at the newest row
                await asyncio.sleep(POLL_SECONDS)
        finally:
            if not polling.done():
                polling.set_result(None)

    async def _read(self, last: int) -> tuple[int, bool]:
        """Deliver the rows past `last`; the new last id, and whether the read was full."""
        rows = await self.db._submit(ALL, _READ, (last, self.publisher, READ_BATCH), _Event)
        if not isinstance(rows, list):
            self._failed(rows)
            return last, False
        self.reading.up(time.monotonic())
        hub, arrivals = self.hub, self.arrivals
        for row in rows:
            last = row.id
            body = row.body
            if body is None:  # this process's own: its subscribers had it at once
                continue
            if arrivals.accept(row.publisher, row.seq) and hub.wants(row.topic):
                self.received += 1
                hub.publish(row.topic, body)
                if self.received % BURST == 0:
                    await asyncio.sleep(0)  # the readers empty their queues
        return last, len(rows) == READ_BATCH

    def _failed(self, error: object) -> None:
        why = error.message if isinstance(error, SvcError) else repr(error)
        self.reading.down(f"the database refused the read: {why}", time.monotonic())
