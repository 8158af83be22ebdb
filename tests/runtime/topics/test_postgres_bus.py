"""Fan-out between instances on one PostgreSQL database (svc.runtime.topics.postgres_bus):
separate OS processes on the suite's private cluster, each with its own database per test.
Across instances in order, each message once; a large payload through the table; an instance
killed and started again; the listening connection terminated by the server, and reconnection
while the database refuses connections: one warn line, one info line, delivery resumes."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from tests.runtime.topics.instance import Instance


@pytest.fixture
def url(postgres_cluster) -> str:
    return postgres_cluster.create_database()


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


def test_a_publish_reaches_another_instance_in_order_and_its_own_once(url) -> None:
    a, b = Instance(url, "a"), Instance(url, "b")
    try:
        a.subscribe("chat")
        b.subscribe("chat")
        b.subscribe("other")
        a.send(do="publish", topic="chat", count=300)
        b.send(do="publish", topic="chat", count=300)
        assert [line["n"] for line in b.received("chat", "a", 300)] == list(range(1, 301))
        assert [line["n"] for line in a.received("chat", "b", 300)] == list(range(1, 301))
        b.publish("other", 1)  # behind everything a sent: a's echoes would have come by now
        b.received("other", "b", 1)
        for instance in (a, b):
            own = [line["n"] for line in instance.seen
                   if line.get("got") == "chat" and line["from"] == instance.name]
            assert own == list(range(1, 301))  # at publish, and never again from the echo
        # one dedicated connection per instance, LISTENing
        names = [row[0] for row in sql(url, "SELECT application_name FROM pg_stat_activity "
                                            "WHERE datname = current_database() AND "
                                            "application_name LIKE 'svc-topics%'")]
        assert sorted(names) == sorted([listener_of(a), listener_of(b)])
        assert a.stop() == 0 and b.stop() == 0
        assert a.errors == [] and b.errors == []
    finally:
        a.kill()
        b.kill()


def test_a_large_payload_crosses_through_the_table_in_order_with_small_ones(url) -> None:
    a, b = Instance(url, "a"), Instance(url, "b")
    try:
        b.subscribe("files")
        a.publish("files", 3)
        a.publish("files", 2, size=20_000)  # over NOTIFY's 8,000 bytes
        a.publish("files", 3)
        a.publish("files", 1, size=7_460)  # under 7,500 bytes, but its envelope is not
        got = b.received("files", "a", 9)
        assert [line["n"] for line in got] == list(range(1, 10))
        assert [line["size"] > 20_000 for line in got] == [False] * 3 + [True] * 2 + [False] * 4
        assert 7_460 < got[-1]["size"] < 7_500
        stored = sql(url, "SELECT count(*) AS n, bool_and(length(body) > 7400) AS big "
                          "FROM svc_topic_payloads")
        assert (stored[0]["n"], stored[0]["big"]) == (3, True)
        # a row older than a minute is pruned by the next large publish (at most every 5 s,
        # and the publisher has not pruned since it started)
        other = Instance(url, "c")
        sql(url, "INSERT INTO svc_topic_payloads (body, at) VALUES ('\\x00'::bytea, 0)")
        other.publish("files", 1, size=10_000)
        assert b.received("files", "c", 1)[0]["size"] > 10_000
        assert sql(url, "SELECT count(*) AS n FROM svc_topic_payloads WHERE at = 0")[0]["n"] == 0
        other.stop()
    finally:
        a.kill()
        b.kill()


def test_killing_an_instance_leaves_the_others_and_a_restarted_one_resubscribes(url) -> None:
    a, b = Instance(url, "a"), Instance(url, "b")
    try:
        a.subscribe("news")
        b.subscribe("news")
        b.publish("news", 2)
        assert len(a.received("news", "b", 2)) == 2
        b.kill()  # kill -9: no goodbye, its session just ends
        c = Instance(url, "c")
        c.publish("news", 2)
        assert [line["n"] for line in a.received("news", "c", 2)] == [1, 2]
        again = Instance(url, "b")  # the same program started again: a new publisher
        assert again.publisher != b.publisher
        again.subscribe("news")
        a.publish("news", 3)
        assert [line["n"] for line in again.received("news", "a", 3)] == [1, 2, 3]
        again.publish("news", 1)
        assert [line["n"] for line in a.received("news", "b", 3)] == [1, 2, 1]
        for instance in (again, c):
            assert instance.stop() == 0
        assert a.errors == []
    finally:
        a.kill()
        b.kill()


def test_a_terminated_listener_is_one_warn_line_and_it_resumes_with_one_info_line(url) -> None:
    a, b = Instance(url, "a"), Instance(url, "b")
    name = url.rsplit("/", 1)[1]
    try:
        a.subscribe("live")
        b.publish("live", 1)
        a.received("live", "b", 1)
        # the server ends a's session, and refuses it for a while: several attempts fail
        admin = url.rsplit("/", 1)[0] + "/postgres"
        sql(admin, f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        terminated = sql(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                              "application_name = $1", listener_of(a))
        assert [row[0] for row in terminated] == [True]
        time.sleep(0.6)  # a few attempts to reconnect, refused
        b.publish("live", 1)  # a is away: lost for it, never replayed
        warned = [line for line in a.errors if "stopped" in line]
        assert len(warned) == 1 and warned[0].startswith(
            "topics: live delivery between processes through PostgreSQL stopped ("), a.errors
        sql(admin, f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        deadline = time.monotonic() + 15
        while not any("resumed" in line for line in a.errors):
            assert time.monotonic() < deadline, a.errors
            time.sleep(0.05)
        b.publish("live", 1)
        assert [line["n"] for line in a.received("live", "b", 2)] == [1, 3]
        assert len(a.errors) == 2, a.errors
        assert a.errors[1].startswith("topics: live delivery between processes through "
                                      "PostgreSQL resumed after ")
        assert a.stats()["dropped"]["missed"] == 1  # b's second: a saw its number skipped
    finally:
        a.kill()
        b.kill()
