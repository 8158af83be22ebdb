"""The `Topics` service (svc.runtime.topics.service): bad input is a clear error and leaves
nothing behind, a stopped service refuses, one service per database, and the service's
place in the runtime's lifecycle (shutdown, the loop's end, gauges)."""

from __future__ import annotations

import asyncio
import collections

import pytest

from svc.runtime import services
from svc.runtime.db import db_open
from svc.runtime.db.postgres import PostgresDb
from svc.runtime.lib.support import SvcError
from svc.runtime.observability.metrics import FAMILIES
from svc.runtime.topics import (MAX_TOPIC_LENGTH, TopicError, Topics, TopicsStopped,
                                start_topics)
from svc.runtime.topics import service
from tests.runtime.topics.running import run
from tests.helpers.svc_process import free_port


async def memory_topics() -> Topics:
    db = await db_open(":memory:")
    topics = await start_topics(db)
    assert isinstance(topics, Topics)
    return topics


@pytest.mark.parametrize("topic, error, message", [
    ("", TopicError, "1 to 200 characters \\(got 0\\)"),
    ("x" * (MAX_TOPIC_LENGTH + 1), TopicError, "1 to 200 characters \\(got 201\\)"),
    ("room\n1", TopicError, "no control or separator characters"),
    ("nul\x00", TopicError, "no control or separator characters"),
    (b"room", TypeError, "a topic name is a str, not bytes"),
    (None, TypeError, "a topic name is a str, not NoneType"),
])
def test_a_bad_topic_name_is_a_clear_error_for_publish_and_subscribe(topic, error,
                                                                       message) -> None:
    async def scenario():
        topics = await memory_topics()
        with pytest.raises(error, match=message):
            topics.publish(topic, b"{}")
        with pytest.raises(error, match=message):
            await topics.subscribe(topic)
        return topics

    topics = run(scenario)
    assert topics.published == 0 and topics.hub.topics == {}


@pytest.mark.parametrize("payload, error, message", [
    ("{}", TypeError, "a message is bytes \\(its JSON\\), not str"),
    (bytearray(b"{}"), TypeError, "not bytearray"),
    (memoryview(b"{}"), TypeError, "not memoryview"),
    (None, TypeError, "not NoneType"),
    (b"\xff\xfe", TopicError, "a message is UTF-8 text"),
    (b"x" * (1_048_576 + 1), TopicError, "at most 1048576 bytes \\(got 1048577\\)"),
])
def test_a_payload_that_is_not_utf8_bytes_within_the_limit_is_a_clear_error(
        tmp_path, payload, error, message) -> None:
    async def scenario():
        db = await db_open(str(tmp_path / "t.sqlite"))  # a bus: nothing may reach its queue
        topics = await start_topics(db)
        sub = await topics.subscribe("t")
        with pytest.raises(error, match=message):
            topics.publish("t", payload)
        return topics, sub.queued

    topics, queued = run(scenario)
    assert queued == 0 and topics.published == 0
    assert topics.bus is not None and not topics.bus.outbox.items


def test_the_largest_payload_and_topic_name_go_through() -> None:
    async def scenario():
        topics = await memory_topics()
        name = "é" * MAX_TOPIC_LENGTH
        sub = await topics.subscribe(name)
        topics.publish(name, b"x" * 1_048_576)
        return len(await sub.next())

    assert run(scenario) == 1_048_576


def test_a_stopped_service_refuses_and_its_subscribers_end() -> None:
    async def scenario():
        topics = await memory_topics()
        sub = await topics.subscribe("t")
        waiting = asyncio.ensure_future(sub.next())
        await asyncio.sleep(0)
        topics.stop()
        topics.stop()  # once is enough; again does nothing
        with pytest.raises(TopicsStopped, match="cannot publish to topic 't': the topics "
                                                "service was stopped"):
            topics.publish("t", b"{}")
        with pytest.raises(TopicsStopped, match="cannot subscribe"):
            await topics.subscribe("t")
        again = await start_topics(topics.db)  # a new service for the same database
        return await waiting, again is not topics and isinstance(again, Topics)

    assert run(scenario) == (None, True)


def test_one_service_per_database_even_when_started_at_once(tmp_path) -> None:
    async def scenario():
        db = await db_open(str(tmp_path / "t.sqlite"))
        first, second = await asyncio.gather(start_topics(db), start_topics(db))
        other = await start_topics(await db_open(":memory:"))
        return first, second, await start_topics(db), other

    first, second, third, other = run(scenario)
    assert first is second is third and other is not first


def test_start_needs_a_database_and_a_reachable_server() -> None:
    async def scenario():
        not_a_db = await start_topics("db.sqlite")  # type: ignore[arg-type]
        unreachable = PostgresDb(f"postgresql://svc@127.0.0.1:{free_port()}/nothing", None)
        return not_a_db, await start_topics(unreachable), service.running()

    not_a_db, unreachable, running = run(scenario)
    assert isinstance(not_a_db, SvcError) and "need a database handle" in not_a_db.message
    assert isinstance(unreachable, SvcError) and unreachable.kind == "database"
    assert unreachable.message.startswith("cannot start topics on PostgreSQL: ")
    assert running == []


def test_an_in_memory_database_is_local_fan_out_only() -> None:
    async def scenario():
        topics = await memory_topics()
        sub = await topics.subscribe("t")
        reached = topics.publish("t", b"1")
        return topics.bus, reached, await sub.next(), topics.bus_up

    assert run(scenario) == (None, 1, b"1", True)


# --- the lifecycle ---------------------------------------------------------------------------

def test_the_service_joins_the_lifecycle_and_shutdown_stops_it(tmp_path) -> None:
    assert "topics" in {component.name for component in services.joined()}

    async def scenario():
        topics = await start_topics(await db_open(str(tmp_path / "t.sqlite")))
        sub = await topics.subscribe("t")
        tasks = topics.bus.tasks()
        services.shut_down()  # what the server's shutdown and every svcc test test do
        stopped = topics.stopped
        await services.end_loop()  # the stopped tasks finish before the loop closes
        return stopped, await sub.next(), [task.done() for task in tasks], service.running()

    stopped, after, done, running = run(scenario)
    assert stopped and after is None and all(done) and running == []


def test_the_gauges_count_subscribers_by_topic_and_messages(tmp_path) -> None:
    async def scenario():
        topics = await start_topics(await db_open(str(tmp_path / "t.sqlite")))
        subs = [await topics.subscribe("a"), await topics.subscribe("a"),
                await topics.subscribe("b")]
        small = await start_topics(await db_open(":memory:"))
        tiny = await small.subscribe("a")
        for _ in range(3):
            topics.publish("a", b"{}")
        rows: dict[str, list] = collections.defaultdict(list)
        services.add_gauges(rows)
        return rows, subs, tiny

    rows, _subs, _tiny = run(scenario)
    assert sorted(rows["svc_topic_subscribers"]) == [[["a"], 3], [["b"], 1]]
    assert rows["svc_topic_messages_published"] == [[[], 3]]
    assert rows["svc_topic_messages_delivered"] == [[[], 6]]
    assert sorted(rows["svc_topic_messages_dropped"]) == [
        [["missed"], 0], [["not_sent"], 0], [["slow_subscriber"], 0]]
    assert rows["svc_topic_bus_up"] == [[["sqlite"], 1]]
    # (other modules this worker imported add their own gauges: svc_db_queue_depth, ...)
    assert {name for name in rows if name.startswith("svc_topic")} <= set(FAMILIES)
