"""Fan-out between every process and instance on one PostgreSQL database: LISTEN/NOTIFY on
one channel, through one dedicated connection per process.

PostgreSQL already is the broker: NOTIFY reaches every session LISTENing on the channel,
across machines, in commit order, with no extra service to run, secure and monitor. Choices:

- **One channel, `svc_topics`**, for every topic. A channel per topic would need a LISTEN per
  topic that any process here subscribes to (and an UNLISTEN racing the last unsubscribe);
  one channel is one LISTEN for the life of the connection, and a receiver drops the topics
  nobody here wants after reading the first bytes of the payload. The topic travels inside
  the payload.
- **One dedicated connection per process, not from the program's pool**: a LISTENing session
  must stay open and idle between notifications, which a pool would lend out, time out or
  close. The same connection sends this process's NOTIFYs (one task, so in publish order)
  and fetches large payloads, so topics cost one session per process, whatever the load.
  Its `application_name` is `svc-topics pid N`, to find it in `pg_stat_activity`.
- **The payload is JSON text**: `{"p": publisher, "s": sequence number, "t": topic, "m":
  message}`, the publisher first so a process skips its own echo by comparing a prefix,
  without parsing (its own subscribers got the message at publish time). The message is the
  JSON the program's code made, carried as a JSON string, so it arrives byte for byte.
- **Large messages go through a table.** NOTIFY payloads must be under 8,000 bytes; one whose
  envelope is over `INLINE_LIMIT` (7,500 bytes, a margin for the server's own framing) is
  inserted into `svc_topic_payloads` and the NOTIFY carries its id (`"r"` instead of `"m"`),
  in one statement. A receiver fetches it only if it has subscribers for the topic, in
  arrival order (later messages wait behind it, so order holds). The table is UNLOGGED (its
  rows are worthless after a crash, so they need no WAL) and rows older than `KEEP_MS` (a
  minute) are deleted by the processes that insert them.
- **Batches.** The sender takes every message waiting (up to `SEND_BATCH`) and sends them
  with one statement, `pg_notify` over an array in order, so a burst of publishes costs one
  round trip, not one each. A receiver hands a burst to its subscribers `BURST` at a time
  (hub.py); what waits meanwhile is bounded (`INCOMING_LIMIT`), so a process that cannot
  keep up with what the others publish drops the newest (one line) instead of growing.
- **Losing the connection** (the server restarted, a network cut, `pg_terminate_backend`):
  ONE warn line says live delivery stopped, the process reconnects by itself with backoff
  (`FIRST_RETRY` doubling to `LAST_RETRY`, with jitter so many processes do not reconnect in
  step), and ONE info line says it resumed. What was published meanwhile, here or elsewhere,
  is lost (at most once): nothing is stored to be replayed, and sequence numbers
  (order.py) make sure nothing arrives out of order after a reconnection. A server that
  stops answering without closing the connection is found by a ping every `PING_SECONDS`
  when idle; every round trip is bounded by `ROUND_TRIP_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import random
import time
from collections import deque
from typing import Any

import msgspec

from svc.runtime.lib.support import SvcError
from svc.runtime.topics.hub import BURST, Hub
from svc.runtime.topics.notices import Drops, Outage
from svc.runtime.topics.order import Arrivals
from svc.runtime.topics.outbox import Outbox

try:
    import asyncpg
except ImportError:  # pragma: no cover - asyncpg is a dependency
    asyncpg = None

CHANNEL = "svc_topics"
#: The largest envelope sent in the NOTIFY itself, in bytes (PostgreSQL's limit is 8,000).
INLINE_LIMIT = 7500
#: Rows of svc_topic_payloads older than this are deleted.
KEEP_MS = 60_000
#: How often a process that stores large messages deletes old rows, at most.
PRUNE_SECONDS = 5.0
#: Messages per NOTIFY statement.
SEND_BATCH = 500
#: Notifications waiting to be handed to subscribers (behind a large payload's fetch, or a
#: burst delivered BURST at a time) before the newest are dropped: a process that cannot keep
#: up with what the others publish sheds load instead of growing.
INCOMING_LIMIT = 10_000
#: Reconnection: the first wait, doubled after each failure up to the last.
FIRST_RETRY = 0.1
LAST_RETRY = 5.0
#: An idle connection is checked this often.
PING_SECONDS = 10.0
#: Connecting, or any statement on the connection, gives up after this long (connection lost).
ROUND_TRIP_SECONDS = 5.0

#: Made under an advisory lock, so instances starting together do not race on the catalog.
TABLE = """
CREATE UNLOGGED TABLE IF NOT EXISTS svc_topic_payloads (
  id BIGSERIAL PRIMARY KEY,
  body BYTEA NOT NULL,
  at BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS svc_topic_payloads_at ON svc_topic_payloads (at);
"""
#: The key of the advisory lock taken while the table is made ("svctopic").
_LOCK_KEY = 0x737663746F706963
_EXISTS = "SELECT to_regclass('svc_topic_payloads') IS NOT NULL"
_NOTIFY_MANY = (f"SELECT pg_notify('{CHANNEL}', m) FROM unnest($1::text[]) WITH ORDINALITY "
                "AS x(m, n) ORDER BY n")
_STORE_AND_NOTIFY = (
    "WITH stored AS (INSERT INTO svc_topic_payloads (body, at) VALUES ($1, $2) RETURNING id) "
    f"SELECT pg_notify('{CHANNEL}', $3::text || stored.id::text || '}}') FROM stored")
_FETCH = "SELECT body FROM svc_topic_payloads WHERE id = $1"
_PRUNE = "DELETE FROM svc_topic_payloads WHERE at < $1"

_encode = msgspec.json.encode
_decode = msgspec.json.decode


class ConnectionLost(ConnectionError):
    """The listening connection closed (its `reason`: what asyncpg said, if anything)."""


def head(publisher: str, seq: int, topic: str) -> str:
    """The start of an envelope, before its message or its payload row's id."""
    return f'{{"p":{_encode(publisher).decode()},"s":{seq},"t":{_encode(topic).decode()}'


class PostgresBus:
    """This process's side of the channel: one task owns the connection, in and out."""

    def __init__(self, url: str, hub: Hub, publisher: str,
                 context: contextvars.Context) -> None:
        self.url = url
        self.hub = hub
        self.publisher = publisher
        self._own = f'{{"p":{_encode(publisher).decode()},'  # this process's echo starts so
        self._context = context  # the service starter's: tasks never inherit a request's
        self._wake = asyncio.Event()
        self.outbox = Outbox(self._wake.set)
        self.arrivals = Arrivals()
        self.outage = Outage("between processes through PostgreSQL")
        self.refusals = Drops("PostgreSQL refused to pass messages on")
        self.backlog = Drops(f"messages from other processes arrived faster than this "
                             f"process handed them to its subscribers (at most "
                             f"{INCOMING_LIMIT} wait)")
        self.received = 0  # messages of other processes delivered here
        self.missing = 0  # large payloads whose row was gone
        self.conn: Any = None  # the asyncpg connection while it is up
        self._incoming: deque[dict] = deque()  # notifications the sending task delivers
        self._burst = 0  # delivered at once during this turn of the loop
        self._task: asyncio.Task[None] | None = None
        self._pruned_at = 0.0
        self._sent = 0  # messages of the batch being sent that are accounted for

    @property
    def up(self) -> bool:
        return self.conn is not None and not self.outage.is_down

    async def start(self) -> None | SvcError:
        """Connect, make the table where missing, LISTEN; then keep it so in the background.
        A database that cannot be reached now is an error (as `db_open`'s is); later losses
        are handled by reconnecting."""
        if asyncpg is None:
            return SvcError("database", "topics on PostgreSQL need asyncpg, which is missing")
        try:
            conn = await self._connect()
        except Exception as exc:  # noqa: BLE001 - unreachable, refused, no rights
            return SvcError("database", f"cannot start topics on PostgreSQL: {_reason(exc)}")
        self.conn = conn
        self.outbox.open = True  # a publish right after the start goes out
        self._task = asyncio.get_running_loop().create_task(self._run(conn),
                                                            context=self._context)
        return None

    def send(self, topic: str, payload: bytes) -> None:
        self.outbox.put(topic, payload)

    async def live(self) -> None:
        """Every process LISTENs from its start: a subscription is live at once."""

    def stop(self) -> None:
        self.outbox.close()
        if self._task is not None:
            self._task.cancel()
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.terminate()

    def tasks(self) -> list[asyncio.Task[None]]:
        return [] if self._task is None else [self._task]

    @property
    def missed(self) -> int:
        """Messages of other processes lost on their way here: numbers never seen, payload
        rows already pruned, notifications dropped behind a slow fetch."""
        return self.arrivals.missed + self.missing + self.backlog.total

    def forget_after_fork(self) -> list[object]:
        """In a worker just forked: what the parent's bus holds (its task, its connection's
        socket) belongs to the parent and is left untouched; the caller keeps it referenced
        so that no finalizer closes the parent's session from here."""
        held: list[object] = [self._task, self.conn]
        self._task = self.conn = None
        return held

    # --- the connection -----------------------------------------------------------------------

    async def _connect(self) -> Any:
        async with asyncio.timeout(ROUND_TRIP_SECONDS):
            conn = await asyncpg.connect(
                self.url, timeout=ROUND_TRIP_SECONDS,
                server_settings={"application_name": f"svc-topics pid {os.getpid()}"})
            try:
                if not await conn.fetchval(_EXISTS):
                    async with conn.transaction():
                        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
                        await conn.execute(TABLE)
                await conn.add_listener(CHANNEL, self._notified)
            except BaseException:
                conn.terminate()
                raise
        conn.add_termination_listener(lambda _conn: self._wake.set())
        return conn

    async def _run(self, conn: Any) -> None:
        """Serve the connection while it lasts; reconnect, with backoff, when it is lost."""
        delay = FIRST_RETRY
        while True:
            if conn is None:
                try:
                    conn = await self._connect()
                except Exception as exc:  # noqa: BLE001 - still unreachable
                    self.outage.down(_reason(exc), time.monotonic())
                    await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                    delay = min(delay * 2, LAST_RETRY)
                    continue
                delay = FIRST_RETRY
                self.outage.up(time.monotonic())
            self.conn = conn
            self.outbox.open = True
            try:
                await self._serve(conn)
                reason = "the connection was closed"
            except Exception as exc:  # noqa: BLE001 - whatever broke it, reconnect
                reason = _reason(exc)
            finally:
                self.conn = None
                self.outbox.close()
                self._incoming.clear()
                self.backlog.end()
                conn.terminate()
            conn = None
            self.outage.down(reason, time.monotonic())
            await asyncio.sleep(FIRST_RETRY * random.uniform(0.5, 1.0))

    async def _serve(self, conn: Any) -> None:
        """Until the connection breaks: large payloads fetched, messages sent, pings."""
        wake, outbox, incoming = self._wake, self.outbox, self._incoming
        while True:
            if conn.is_closed():
                raise ConnectionLost("the connection to PostgreSQL was closed")
            if incoming:
                await self._deliver_waiting(conn)
            if outbox.items:
                batch = outbox.take(SEND_BATCH)
                self._sent = 0
                try:
                    await self._send(conn, batch)
                except BaseException:
                    outbox.lost += len(batch) - self._sent  # the rest went down with it
                    raise
                continue
            if incoming:
                continue
            wake.clear()
            try:
                async with asyncio.timeout(PING_SECONDS):
                    await wake.wait()
            except TimeoutError:
                async with asyncio.timeout(ROUND_TRIP_SECONDS):
                    await conn.fetchval("SELECT 1")

    # --- sending ------------------------------------------------------------------------------

    async def _send(self, conn: Any, batch: list[tuple[int, str, bytes]]) -> None:
        """The batch in order: runs of small envelopes in one statement, each large one with
        its row."""
        inline: list[str] = []
        for seq, topic, payload in batch:
            start = head(self.publisher, seq, topic)
            if len(payload) < INLINE_LIMIT:
                envelope = f'{start},"m":{_encode(payload.decode()).decode()}}}'
                if len(envelope) < INLINE_LIMIT // 4 or len(envelope.encode()) <= INLINE_LIMIT:
                    inline.append(envelope)
                    continue
            if inline:
                await self._statement(conn, len(inline), _NOTIFY_MANY, inline)
                inline = []
            await self._statement(conn, 1, _STORE_AND_NOTIFY, payload,
                                  int(time.time() * 1000), start + ',"r":')
            if time.monotonic() - self._pruned_at > PRUNE_SECONDS:
                self._pruned_at = time.monotonic()
                await self._statement(conn, 0, _PRUNE, int(time.time() * 1000) - KEEP_MS)
        if inline:
            await self._statement(conn, len(inline), _NOTIFY_MANY, inline)

    async def _statement(self, conn: Any, messages: int, sql: str, *args: Any) -> None:
        """One statement carrying `messages` messages. The server refusing it (the
        notification queue full, the table gone) loses them; a broken connection raises."""
        try:
            async with asyncio.timeout(ROUND_TRIP_SECONDS):
                await conn.execute(sql, *args)
        except asyncpg.PostgresError as exc:
            if conn.is_closed():
                raise
            if not self.refusals.count:
                self.refusals.what = f"PostgreSQL refused to pass messages on ({_reason(exc)})"
            self.refusals.add(messages)
            self.outbox.lost += messages
            self._sent += messages  # accounted for
            return
        self._sent += messages
        if self.refusals.count and messages:
            self.refusals.end()

    # --- receiving ----------------------------------------------------------------------------

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        """A NOTIFY on the channel (asyncpg calls this on the loop)."""
        if payload.startswith(self._own):
            return  # this process's own: its subscribers had it at once
        try:
            message = _decode(payload)
        except msgspec.DecodeError:
            return  # not ours: someone else NOTIFYing on the channel
        if not _valid(message):
            return
        publisher, seq, topic = message["p"], message["s"], message["t"]
        incoming = self._incoming
        if incoming or "m" not in message or self._burst >= BURST:
            # behind others, a payload to fetch, or a burst: the sending task delivers it,
            # letting the loop turn between bursts
            if len(incoming) >= INCOMING_LIMIT:
                self.backlog.add()
                return
            incoming.append(message)
            self._wake.set()
            return
        if self.arrivals.accept(publisher, seq) and self.hub.wants(topic):
            self.received += 1
            self.hub.publish(topic, message["m"].encode())
            self._burst += 1
            if self._burst == 1:  # counted again from the loop's next turn
                asyncio.get_running_loop().call_soon(self._turned)

    def _turned(self) -> None:
        self._burst = 0

    async def _deliver_waiting(self, conn: Any) -> None:
        """The notifications that wait, in order, fetching large payloads as they come and
        letting the loop turn after each BURST delivered."""
        incoming, hub = self._incoming, self.hub
        delivered = 0
        while incoming:
            message = incoming[0]
            topic = message["t"]
            if self.arrivals.accept(message["p"], message["s"]) and hub.wants(topic):
                body = message.get("m")
                if body is not None:
                    payload: bytes | None = body.encode()
                else:
                    async with asyncio.timeout(ROUND_TRIP_SECONDS):
                        payload = await conn.fetchval(_FETCH, message["r"])
                    if payload is None:
                        self.missing += 1  # pruned already: lost
                if payload is not None and hub.wants(topic):
                    self.received += 1
                    hub.publish(topic, payload)
                    delivered += 1
                    if delivered % BURST == 0:
                        await asyncio.sleep(0)  # the readers empty their queues
            incoming.popleft()
        self.backlog.end()


def _valid(message: Any) -> bool:
    """Whether a notification on the channel is an envelope this module wrote."""
    return (type(message) is dict and type(message.get("p")) is str
            and type(message.get("s")) is int and type(message.get("t")) is str
            and (type(message.get("m")) is str or type(message.get("r")) is int))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name
