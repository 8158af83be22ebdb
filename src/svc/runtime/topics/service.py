"""The `Topics` service: publish a message to a named topic, subscribe to one, in this process
and in every process on the same database.

    topics = await start_topics(db)        # Topics, or SvcError; the same one per Db
    topics.publish("room:1", b'{"text": "hi"}')
    subscription = await topics.subscribe("room:1")
    message = await subscription.next()    # bytes; None once closed
    subscription.close()
    topics.stop()

What it promises: delivery is live and AT MOST ONCE, IN ORDER PER PUBLISHER. A subscriber gets
the messages published after its `subscribe` returned, each once, each publishing process's
in the order it published them; it may miss some (it read too slowly and its queue was full;
the database connection was down; its process started after the publish) and is never told
which, so a program that must not lose work uses jobs. Live messages are not stored: nothing
is replayed after a gap, which is also what keeps them in order.

Which bus carries messages between processes depends on the database the service is started
for: PostgreSQL's LISTEN/NOTIFY (postgres_bus.py) reaches every process of every instance on
it; an SQLite file, a table every process on the machine polls (sqlite_bus.py); `:memory:`
is one process, so its fan-out is local only (hub.py). This process's own subscribers get a
message during `publish` itself, before any bus sees it.

`publish` never waits: it checks its arguments, hands the message to the local subscriptions
and appends it to the bus's outgoing queue. Bad arguments are Python exceptions (the compiler
checks topic names and message classes, so at run time they are a bug of the caller): a topic
that is not 1 to `MAX_TOPIC_LENGTH` printable characters or a payload that is not UTF-8 (the
JSON generated code makes) is a `TopicError`, a payload that is not `bytes` a `TypeError`,
a payload over `MESSAGE_LIMIT` (1 MiB, the WebSocket message limit) a `TopicError`, and using
a stopped service `TopicsStopped`.

The module joins the runtime's lifecycle registry (svc.runtime.services): its services stop
at shutdown and after each `svcc test` test, are made fresh in a worker just forked
(`SVC_WORKERS`: a new publisher id, a connection of its own), and add their gauges to the
metrics. The running services are kept here by database, the way svc.runtime.db keeps its
open handles; the server and the test runner hold the `Topics` they started.
"""

from __future__ import annotations

import asyncio
import contextvars
import secrets
from typing import TYPE_CHECKING, Union

from svc.rules.contract import MESSAGE_LIMIT
from svc.rules.topic_names import MAX_TOPIC_LENGTH, topic_name_problem
from svc.runtime import services
from svc.runtime.db.base import Db
from svc.runtime.lib.support import SvcError
from svc.runtime.topics.hub import DEFAULT_QUEUE_SIZE, Hub, Subscription

if TYPE_CHECKING:
    from svc.runtime.topics.postgres_bus import PostgresBus
    from svc.runtime.topics.sqlite_bus import SqliteBus

    Bus = Union[PostgresBus, SqliteBus]

class TopicError(ValueError):
    """A topic name or a payload the service cannot carry."""


class TopicsStopped(RuntimeError):
    """The service was stopped: nothing is published or subscribed through it any more."""


def check_topic(topic: object) -> str:
    """`topic`, if it can name a topic; else the exception saying why."""
    if type(topic) is not str:
        raise TypeError(f"a topic name is a str, not {type(topic).__name__}")
    problem = topic_name_problem(topic)
    if problem is not None:
        raise TopicError(problem)
    return topic


def check_payload(payload: object) -> bytes:
    """`payload`, if a topic can carry it; else the exception saying why."""
    if type(payload) is not bytes:
        raise TypeError(f"a message is bytes (its JSON), not {type(payload).__name__}")
    if len(payload) > MESSAGE_LIMIT:
        raise TopicError(f"a message has at most {MESSAGE_LIMIT} bytes (got {len(payload)})")
    try:
        payload.decode()
    except UnicodeDecodeError as exc:
        raise TopicError(f"a message is UTF-8 text (its JSON): {exc}") from None
    return payload


class Topics:
    """Publish and subscribe on one database's topics, from this process."""

    def __init__(self, db: Db, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self.db = db
        self.hub = Hub(queue_size)
        self.publisher = _new_publisher_id()
        self.bus: Bus | None = None
        self.published = 0
        self.stopped = False

    def __repr__(self) -> str:
        return f"Topics({self.db!r})"

    async def _start(self) -> None | SvcError:
        self.bus = _bus_for(self.db, self.hub, self.publisher)
        return None if self.bus is None else await self.bus.start()

    def publish(self, topic: str, payload: bytes) -> int:
        """Send `payload` to every subscriber of `topic`, here and in the other processes;
        how many subscriptions of this process took it. Never waits."""
        if self.stopped:
            raise TopicsStopped(f"cannot publish to topic {topic!r}: the topics service was "
                                "stopped")
        check_topic(topic)
        check_payload(payload)
        self.published += 1
        reached = self.hub.publish(topic, payload)
        if self.bus is not None:
            self.bus.send(topic, payload)
        return reached

    async def subscribe(self, topic: str) -> Subscription:
        """A subscription to `topic`, live once this returns: every message published after
        it, here or in another process, is meant for it. The caller closes it."""
        if self.stopped:
            raise TopicsStopped(f"cannot subscribe to topic {topic!r}: the topics service was "
                                "stopped")
        check_topic(topic)
        subscription = self.hub.subscribe(topic)
        if self.bus is not None:
            try:
                await self.bus.live()
            except BaseException:
                subscription.close()
                raise
        return subscription

    def stop(self) -> None:
        """Stop once: every subscription closes (their readers get None), the bus stops
        (unsent messages are lost). Later calls do nothing."""
        if self.stopped:
            return
        self.stopped = True
        if _running.get(self.db) is self:
            del _running[self.db]
        self.hub.close_all()
        if self.bus is not None:
            self.bus.stop()
            _stopping.extend(self.bus.tasks())

    @property
    def bus_up(self) -> bool:
        """Whether live delivery between processes works now (always, with no bus)."""
        return self.bus is None or self.bus.up

    def dropped(self) -> dict[str, int]:
        """Messages lost here, by reason (the metrics' labels)."""
        bus = self.bus
        counts = {"slow_subscriber": self.hub.dropped, "not_sent": 0, "missed": 0}
        if bus is not None:
            counts["not_sent"] = bus.outbox.not_sent
            counts["missed"] = bus.missed
        return counts

    async def _restart_after_fork(self) -> str | None:
        """In a worker just forked: a publisher of its own, no subscriptions and no counts
        (the parent's are the parent's), and a bus of its own on this event loop."""
        self.hub = Hub(self.hub.queue_size)
        self.published = 0
        self.publisher = _new_publisher_id()
        if self.bus is not None:
            _left_by_parent.extend(self.bus.forget_after_fork())
        started = await self._start()
        return None if started is None else started.message


def _new_publisher_id() -> str:
    """Random per service and process: a restarted process is a new publisher."""
    return secrets.token_hex(6)


def _bus_for(db: Db, hub: Hub, publisher: str) -> Bus | None:
    """The bus between the processes on `db`: none for an in-memory database."""
    context = contextvars.copy_context()
    if db.dialect == "postgresql":
        from svc.runtime.topics.postgres_bus import PostgresBus

        return PostgresBus(getattr(db, "url"), hub, publisher, context)
    if getattr(db, "path", ":memory:") == ":memory:":
        return None
    from svc.runtime.topics.sqlite_bus import SqliteBus

    return SqliteBus(db, hub, publisher, context)


# --- the running services of this process ---------------------------------------------------

_running: dict[Db, Topics] = {}
_starting: dict[Db, asyncio.Future[Topics | SvcError]] = {}
#: Tasks of stopped services, until the loop's end awaits them.
_stopping: list[asyncio.Task[None]] = []
#: A forked worker keeps what the parent's services held referenced, untouched.
_left_by_parent: list[object] = []


async def start_topics(db: Db, queue_size: int = DEFAULT_QUEUE_SIZE) -> Topics | SvcError:
    """The topics service of `db` in this process, started on first use (its bus connected,
    its table made): the same `Topics` for the same `Db` until it is stopped."""
    if not isinstance(db, Db):
        return SvcError("invalid", "topics need a database handle (db_open's)")
    found = _running.get(db)
    if found is not None:
        return found
    starting = _starting.get(db)
    if starting is None:
        starting = _starting[db] = asyncio.ensure_future(_start(db, queue_size))
    try:
        return await asyncio.shield(starting)
    finally:
        if _starting.get(db) is starting and starting.done():
            del _starting[db]


async def _start(db: Db, queue_size: int) -> Topics | SvcError:
    topics = Topics(db, queue_size)
    problem = await topics._start()
    if problem is not None:
        topics.stopped = True
        if topics.bus is not None:
            topics.bus.stop()
        return problem
    _running[db] = topics
    return topics


def running() -> list[Topics]:
    return list(_running.values())


def stop_all() -> None:
    """Every service of this process (server shutdown, the end of each `svcc test` test)."""
    for topics in list(_running.values()):
        topics.stop()


async def _at_loop_end() -> None:
    """Before the loop closes: stop what runs and let the stopped tasks finish cancelling."""
    stop_all()
    loop = asyncio.get_running_loop()
    mine = [task for task in _stopping if task.get_loop() is loop]
    _stopping[:] = [task for task in _stopping if task.get_loop() is not loop]
    if mine:
        await asyncio.gather(*mine, return_exceptions=True)


async def _after_fork() -> str | None:
    """In a worker just forked: each service made fresh on the worker's loop."""
    _starting.clear()
    _stopping.clear()
    for topics in list(_running.values()):
        problem = await topics._restart_after_fork()
        if problem is not None:
            return f"topics: {problem}"
    return None


def _gauges(rows: dict[str, list]) -> None:
    """Subscriptions by topic, the counters, and whether each bus is up, now."""
    subscribers: dict[str, int] = {}
    counters = {"published": 0, "delivered": 0, "received": 0}
    dropped: dict[str, int] = {}
    up: dict[str, int] = {}
    for topics in list(_running.values()):
        for topic, count in topics.hub.subscribers().items():
            subscribers[topic] = subscribers.get(topic, 0) + count
        counters["published"] += topics.published
        counters["delivered"] += topics.hub.delivered
        counters["received"] += 0 if topics.bus is None else topics.bus.received
        for reason, count in topics.dropped().items():
            dropped[reason] = dropped.get(reason, 0) + count
        if topics.bus is not None:
            dialect = topics.db.dialect
            up[dialect] = min(up.get(dialect, 1), int(topics.bus_up))
    if not _running:
        return
    rows.setdefault("svc_topic_subscribers", []).extend(
        [[topic], count] for topic, count in subscribers.items())
    for name, count in counters.items():
        rows.setdefault(f"svc_topic_messages_{name}", []).append([[], count])
    rows.setdefault("svc_topic_messages_dropped", []).extend(
        [[reason], count] for reason, count in dropped.items())
    rows.setdefault("svc_topic_bus_up", []).extend(
        [[dialect], value] for dialect, value in up.items())


services.join(services.Component(
    "topics", at_loop_end=_at_loop_end, at_shutdown=stop_all, gauges=_gauges,
    after_fork=_after_fork))
