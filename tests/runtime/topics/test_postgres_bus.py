"""Fan-out between instances on one PostgreSQL database (svc.runtime.topics.postgres_bus):
separate OS processes on the suite's private cluster. Across instances in order, each message
once; a large payload through the table; an instance killed and started again; the listening
connection terminated by the server, and reconnection while the database refuses connections:
one warn line, one info line, delivery resumes.

Two instances, `a` and `b`, serve the whole module on one database (starting a process is
most of a test's time); each test uses topics of its own and looks only at the lines it
caused, and starts more instances where it needs them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import pytest

from svc.runtime.db import close_all, db_open
from svc.runtime.topics import service, start_topics
from tests.runtime.topics.instance import Instance


@dataclass
class Pair:
    url: str
    a: Instance
    b: Instance


@pytest.fixture(scope="module")
def pair(postgres_cluster) -> Iterator[Pair]:
    url = postgres_cluster.create_database()
    a = Instance(url, "a")
    try:
        b = Instance(url, "b")
    except BaseException:
        a.kill()
        raise
    yield Pair(url, a, b)
    a.kill()
    b.kill()


def sql(url: str, statement: str, *args) -> list:
    async def query():
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetch(statement, *args)
        finally:
            await conn.close()
    return asyncio.run(query())


def listener_of(instance: Instance) -> str:
    return f"svc-topics pid {instance.pid}"


def test_a_publish_reaches_another_instance_in_order_and_its_own_once(pair) -> None:
    a, b = pair.a, pair.b
    a.subscribe("chat")
    b.subscribe("chat")
    b.subscribe("after")
    a.send(do="publish", topic="chat", count=300)
    b.send(do="publish", topic="chat", count=300)
    from_a = [line["n"] for line in b.received("chat", "a", 300)]
    from_b = [line["n"] for line in a.received("chat", "b", 300)]
    assert from_a == from_b == list(range(1, 301))
    b.publish("after", 1)  # behind everything a sent: a's echoes would have come by now
    b.received("after", "b", 1)
    for instance in (a, b):
        own = [line["n"] for line in instance.seen
               if line.get("got") == "chat" and line["from"] == instance.name]
        assert own == list(range(1, 301))  # at publish, and never again from the echo
    # one dedicated connection per instance, LISTENing
    names = [row[0] for row in sql(pair.url, "SELECT application_name FROM pg_stat_activity "
                                             "WHERE datname = current_database() AND "
                                             "application_name LIKE 'svc-topics%'")]
    assert sorted(names) == sorted([listener_of(a), listener_of(b)])
    assert a.errors == [] and b.errors == []


def test_a_large_payload_crosses_through_the_table_in_order_with_small_ones(pair) -> None:
    a, b = pair.a, pair.b
    # a row older than a minute: a's first large publish prunes it (at most every 5 s)
    sql(pair.url, "INSERT INTO svc_topic_payloads (body, at) VALUES ('\\x00'::bytea, 0)")
    b.subscribe("files")
    first = a.stats()["published"] + 1  # a's numbers go on from the last test's
    a.publish("files", 3)
    a.publish("files", 2, size=20_000)  # over NOTIFY's 8,000 bytes
    a.publish("files", 3)
    a.publish("files", 1, size=7_460)  # under 7,500 bytes, but its envelope is not
    got = b.received("files", "a", 9)
    assert [line["n"] for line in got] == list(range(first, first + 9))
    assert [line["size"] > 20_000 for line in got] == [False] * 3 + [True] * 2 + [False] * 4
    assert 7_460 < got[-1]["size"] < 7_500
    stored = sql(pair.url, "SELECT count(*) AS n, bool_and(length(body) > 7400) AS big, "
                           "bool_and(at > 0) AS recent FROM svc_topic_payloads")
    assert tuple(stored[0]) == (3, True, True)


def test_killing_an_instance_leaves_the_others_and_a_restarted_one_resubscribes(pair) -> None:
    a, b = pair.a, pair.b
    a.subscribe("news")
    c = Instance(pair.url, "c")
    try:
        c.publish("news", 2)
        assert [line["n"] for line in a.received("news", "c", 2)] == [1, 2]
        c.kill()  # kill -9: no goodbye, its session just ends
        b.publish("news", 1)  # a's subscription goes on
        a.received("news", "b", 1)
        again = Instance(pair.url, "c")  # the same program started again: a new publisher
        assert again.publisher != c.publisher
        again.subscribe("news")
        a.publish("news", 2)
        assert len(again.received("news", "a", 2)) == 2
        again.publish("news", 1)
        assert [line["n"] for line in a.received("news", "c", 3)] == [1, 2, 1]
        assert again.stop() == 0 and a.errors == [] and again.errors == []
    finally:
        c.kill()


def test_a_terminated_listener_is_one_warn_line_and_it_resumes_with_one_info_line(pair) -> None:
    a, b = pair.a, pair.b
    name = pair.url.rsplit("/", 1)[1]
    admin = pair.url.rsplit("/", 1)[0] + "/postgres"
    a.subscribe("live")
    b.publish("live", 1)
    first = a.received("live", "b", 1)[-1]["n"]
    # the server ends a's session, and refuses it for a while: several attempts fail
    sql(admin, f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
    try:
        terminated = sql(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                "application_name = $1", listener_of(a))
        assert [row[0] for row in terminated] == [True]
        time.sleep(0.6)  # a few attempts to reconnect, refused
        b.publish("live", 1)  # a is away: lost for it, never replayed
        warned = [line for line in a.errors if "stopped" in line]
        assert len(warned) == 1 and warned[0].startswith(
            "topics: live delivery between processes through PostgreSQL stopped ("), a.errors
    finally:
        sql(admin, f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
    deadline = time.monotonic() + 15
    while not any("resumed" in line for line in a.errors):
        assert time.monotonic() < deadline, a.errors
        time.sleep(0.05)
    b.publish("live", 1)
    assert [line["n"] for line in a.received("live", "b", 2)] == [first, first + 2]
    assert len(a.errors) == 2, a.errors
    assert a.errors[1].startswith("topics: live delivery between processes through "
                                  "PostgreSQL resumed after ")
    assert a.stats()["dropped"]["missed"] == 1  # b's second: a saw its number skipped


def test_the_notification_is_json_and_a_publish_right_after_the_start_goes_out(pair) -> None:
    """What another process (or another svc version) reads on the channel: the publisher, its
    number, the topic and the message as a JSON string; a large one names its payload row."""
    async def scenario():
        listener = await asyncpg.connect(pair.url)
        heard: asyncio.Queue[str] = asyncio.Queue()
        await listener.add_listener("svc_topics", lambda *args: heard.put_nowait(args[3]))
        try:
            topics = await start_topics(await db_open(pair.url))
            topics.publish("room:1", '{"text": "héllo"}'.encode())
            topics.publish("room:1", b'"' + b"x" * 9_000 + b'"')
            small = json.loads(await asyncio.wait_for(heard.get(), 10))
            large = json.loads(await asyncio.wait_for(heard.get(), 10))
            row = await listener.fetchval("SELECT body FROM svc_topic_payloads WHERE id = $1",
                                          large["r"])
            return topics.publisher, small, large, row
        finally:
            await listener.close()
            service.stop_all()
            close_all()

    publisher, small, large, row = asyncio.run(scenario())
    assert small == {"p": publisher, "s": 1, "t": "room:1", "m": '{"text": "héllo"}'}
    assert set(large) == {"p", "s", "t", "r"} and large["s"] == 2
    assert row == b'"' + b"x" * 9_000 + b'"'


def test_a_message_the_server_refuses_is_dropped_with_one_line_and_sending_goes_on(pair) -> None:
    a, b = pair.a, pair.b
    b.subscribe("refused")
    sql(pair.url, "DROP TABLE svc_topic_payloads")  # a large message has nowhere to go
    try:
        before = a.stats()["dropped"]["not_sent"]
        a.publish("refused", 2, size=10_000)
        a.publish("refused", 1)  # a small one goes: the episode is over
        got = b.received("refused", "a", 1)
        assert [line["size"] < 10_000 for line in got] == [True]
        assert a.stats()["dropped"]["not_sent"] == before + 2
        refused = [line for line in a.errors if "refused" in line]
        assert len(refused) == 1 and refused[0].startswith(
            "topics: PostgreSQL refused to pass messages on (UndefinedTableError: "), refused
        assert refused[0].endswith(": 2 messages dropped")
    finally:
        asyncio.run(_make_table(pair.url))


async def _make_table(url: str) -> None:
    from svc.runtime.topics.postgres_bus import TABLE

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(TABLE)
    finally:
        await conn.close()
