"""Fan-out between processes on one SQLite file (svc.runtime.topics.sqlite_bus): two real
processes both ways, in order per publisher; and, in this process with a second sqlite3
connection standing for another process, the table's rules: start at the newest row, skip
what would arrive out of order, prune old rows, poll only while subscribed, and one line
each way when the database refuses."""

from __future__ import annotations

import asyncio
import sqlite3
import time

from svc.runtime.db import db_open
from svc.runtime.topics import Topics, start_topics
from svc.runtime.topics import service, sqlite_bus
from tests.runtime.topics.running import run
from tests.runtime.topics.instance import Instance


def test_two_processes_fan_out_both_ways_in_order_each_message_once(tmp_path) -> None:
    path = str(tmp_path / "app.sqlite")
    a, b = Instance(path, "a"), Instance(path, "b")
    try:
        a.subscribe("chat")
        b.subscribe("chat")
        a.send(do="publish", topic="chat", count=150)
        b.send(do="publish", topic="chat", count=150)
        from_b = a.received("chat", "b", 150)
        from_a = b.received("chat", "a", 150)
        assert [line["n"] for line in from_b] == list(range(1, 151))
        assert [line["n"] for line in from_a] == list(range(1, 151))
        time.sleep(3 * sqlite_bus.POLL_SECONDS)  # an echo of its own would have come by now
        for instance in (a, b):
            instance.stats()
            own = [line["n"] for line in instance.seen
                   if line.get("got") == "chat" and line["from"] == instance.name]
            assert own == list(range(1, 151))  # delivered at publish, never again
        assert a.stop() == 0 and b.stop() == 0
        assert a.errors == [] and b.errors == []
    finally:
        a.kill()
        b.kill()


# --- the table's rules, with a second connection as the other process -------------------------

def other_process(path: str, *rows: tuple[str, int, str, bytes], at: int | None = None) -> None:
    """Rows written as another process would: (publisher, seq, topic, body)."""
    now = int(time.time() * 1000) if at is None else at
    with sqlite3.connect(path, timeout=5) as conn:
        conn.executemany("INSERT INTO svc_topic_events (publisher, seq, topic, body, at) "
                         "VALUES (?, ?, ?, ?, ?)", [(*row, now) for row in rows])


async def file_topics(path: str) -> Topics:
    topics = await start_topics(await db_open(path))
    assert isinstance(topics, Topics)
    return topics


async def drain(sub, wait: float = 4 * sqlite_bus.POLL_SECONDS) -> list[bytes]:
    got = []
    while True:
        try:
            async with asyncio.timeout(wait):
                got.append(await sub.next())
        except TimeoutError:
            return got


def test_a_subscriber_starts_at_the_newest_row_and_order_per_publisher_holds(tmp_path) -> None:
    path = str(tmp_path / "app.sqlite")

    async def scenario():
        topics = await file_topics(path)
        other_process(path, ("old", 1, "t", b"before anyone subscribed"))
        sub = await topics.subscribe("t")
        other_process(path, ("p", 5, "t", b"p5"), ("q", 1, "t", b"q1"), ("p", 3, "t", b"p3"),
                      ("p", 9, "elsewhere", b"p9"), ("p", 7, "t", b"p7"), ("q", 2, "t", b"q2"))
        return await drain(sub), topics.bus.arrivals

    got, arrivals = run(scenario)
    # p3 came after p5 and p7 after p9 (a topic nobody here wants, which still moves p's
    # number on): both refused, never delivered out of order; 9 after 5 counts 6-8 missed
    assert got == [b"p5", b"q1", b"q2"]
    assert arrivals.refused == 2 and arrivals.missed == 3


def test_old_rows_are_pruned_and_ids_are_never_reused(tmp_path) -> None:
    path = str(tmp_path / "app.sqlite")

    async def scenario():
        topics = await file_topics(path)
        an_hour_ago = int(time.time() * 1000) - 3_600_000
        other_process(path, *[("old", n, "t", b"x") for n in range(1, 6)], at=an_hour_ago)
        topics.publish("t", b"new")  # a publisher prunes (at most every PRUNE_SECONDS)
        await asyncio.sleep(0.2)
        return topics

    run(scenario)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id, publisher, body FROM svc_topic_events").fetchall()
    assert [(publisher, body) for _, publisher, body in rows] == [(rows[0][1], b"new")]
    assert rows[0][0] == 6  # after ids 1-5, even though they are gone


def test_a_process_polls_only_while_it_has_subscribers(tmp_path) -> None:
    path = str(tmp_path / "app.sqlite")

    async def scenario():
        topics = await file_topics(path)
        bus = topics.bus
        idle_at_start = bus._poller is None
        sub = await topics.subscribe("t")
        polling = not bus._poller.done()
        sub.close()
        await asyncio.sleep(3 * sqlite_bus.POLL_SECONDS)
        stopped = bus._poller.done()
        other_process(path, ("p", 1, "t", b"while nobody listened"))
        again = await topics.subscribe("t")
        other_process(path, ("p", 2, "t", b"after"))
        return idle_at_start, polling, stopped, await drain(again)

    assert run(scenario) == (True, True, True, [b"after"])


def test_a_database_that_refuses_is_one_line_each_way_and_delivery_resumes(tmp_path,
                                                                          capfd) -> None:
    path = str(tmp_path / "app.sqlite")

    async def scenario():
        topics = await file_topics(path)
        sub = await topics.subscribe("t")
        with sqlite3.connect(path) as conn:
            conn.execute("DROP TABLE svc_topic_events")
        for n in range(5):  # each insert fails; so does each poll meanwhile
            topics.publish("t", b"lost %d" % n)
            await asyncio.sleep(sqlite_bus.POLL_SECONDS)
        down = capfd.readouterr().err
        with sqlite3.connect(path) as conn:
            conn.executescript(sqlite_bus.TABLE)
        topics.publish("t", b"sent")
        other_process(path, ("p", 1, "t", b"back"))
        local = [await sub.next() for _ in range(6)]
        return local, await drain(sub), down, topics.dropped()

    local, remote, down, dropped = run(scenario)
    assert local == [b"lost 0", b"lost 1", b"lost 2", b"lost 3", b"lost 4", b"sent"]
    assert remote == [b"back"]
    assert dropped["not_sent"] == 5
    lines = sorted(down.splitlines(), key=lambda line: "insert" not in line)  # either first
    assert len(lines) == 2, lines
    assert lines[0].startswith("topics: live delivery from this process to the others on this "
                               "SQLite file stopped (the database refused the insert: ")
    assert lines[1].startswith("topics: live delivery from the other processes on this SQLite "
                               "file to this one stopped (the database refused the read: ")
    assert all(line.endswith("messages published meanwhile are lost; retrying by itself")
               for line in lines)
    resumed = capfd.readouterr().err.splitlines()
    assert sorted(line.split(" resumed")[0] for line in resumed) == [
        "topics: live delivery from the other processes on this SQLite file to this one",
        "topics: live delivery from this process to the others on this SQLite file"]
