"""Local fan-out (svc.runtime.topics.hub): order, the bounded queue and its one line per
episode, closing, and 10,000 subscriptions in a process of their own (RSS measured there)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest

from svc.runtime.topics.hub import DEFAULT_QUEUE_SIZE, Hub
from tests.runtime.topics.instance import REPO


def run(body):
    return asyncio.run(body())


def test_each_subscriber_gets_every_message_of_its_topic_in_order() -> None:
    async def scenario():
        hub = Hub()
        first, second, other = hub.subscribe("t"), hub.subscribe("t"), hub.subscribe("u")
        for n in range(100):
            assert hub.publish("t", b"%d" % n) == 2
        assert hub.publish("nobody", b"x") == 0
        got = [[await sub.next() for _ in range(100)] for sub in (first, second)]
        return got, other.queued, hub.delivered

    got, other_queued, delivered = run(scenario)
    assert got[0] == got[1] == [b"%d" % n for n in range(100)]
    assert other_queued == 0 and delivered == 200


def test_a_waiting_reader_is_woken_by_a_publish_and_one_payload_is_shared() -> None:
    async def scenario():
        hub = Hub()
        subs = [hub.subscribe("t") for _ in range(3)]
        readers = [asyncio.ensure_future(sub.next()) for sub in subs]
        await asyncio.sleep(0)
        payload = b'{"a":1}'
        hub.publish("t", payload)
        return payload, await asyncio.gather(*readers)

    payload, got = run(scenario)
    assert all(item is payload for item in got)  # no copy per subscriber


def test_a_full_queue_drops_the_newest_with_one_line_per_episode(capfd) -> None:
    async def scenario():
        hub = Hub(queue_size=4)
        sub = hub.subscribe("room:1")
        for n in range(10):  # 4 fit, 6 dropped
            hub.publish("room:1", b"%d" % n)
        first = [await sub.next() for _ in range(3)]
        lines_while_behind = capfd.readouterr().err
        last = await sub.next()  # the queue is empty again: the episode is over
        after_first = capfd.readouterr().err
        for n in range(10, 16):  # a second episode: 4 fit, 2 dropped, then closed
            hub.publish("room:1", b"%d" % n)
        sub.close()
        return first + [last], lines_while_behind, after_first, capfd.readouterr().err, sub, hub

    got, while_behind, after_first, after_close, sub, hub = run(scenario)
    assert got == [b"0", b"1", b"2", b"3"]  # the oldest kept, the newest dropped
    assert while_behind == ""
    assert after_first.splitlines() == [
        "topics: a subscriber of topic 'room:1' fell behind (its queue holds 4): 6 messages "
        "dropped"]
    assert after_close.splitlines() == [
        "topics: a subscriber of topic 'room:1' fell behind (its queue holds 4): 2 messages "
        "dropped"]
    assert sub.dropped == 8 and hub.dropped == 8


def test_close_ends_the_reader_discards_the_queue_and_forgets_the_topic() -> None:
    async def scenario():
        hub = Hub()
        sub = hub.subscribe("t")
        waiting = asyncio.ensure_future(sub.next())
        await asyncio.sleep(0)
        sub.close()
        ended = await waiting
        sub.close()  # again: nothing
        iterated = [payload async for payload in sub]
        queued_sub = hub.subscribe("t")
        hub.publish("t", b"x")
        with queued_sub:
            pass
        return ended, iterated, await queued_sub.next(), hub.publish("t", b"y"), hub.topics

    ended, iterated, after_close, reached, topics = run(scenario)
    assert ended is None and iterated == [] and after_close is None
    assert reached == 0 and topics == {}


def test_async_for_reads_until_closed_and_a_cancelled_reader_leaves_it_usable() -> None:
    async def scenario():
        hub = Hub()
        sub = hub.subscribe("t")
        cancelled = asyncio.ensure_future(sub.next())
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        got = []

        async def reader():
            async with sub:
                async for payload in sub:
                    got.append(payload)
                    if payload == b"2":
                        return

        task = asyncio.ensure_future(reader())
        await asyncio.sleep(0)
        for n in range(4):
            hub.publish("t", b"%d" % n)
        await task
        return got, sub.closed, hub.topics

    got, closed, topics = run(scenario)
    assert got == [b"0", b"1", b"2"] and closed and topics == {}


def test_one_subscription_has_one_reader() -> None:
    async def scenario():
        hub = Hub()
        sub = hub.subscribe("t")
        first = asyncio.ensure_future(sub.next())
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="already has a reader"):
            await sub.next()
        sub.close()
        return await first

    assert run(scenario) is None


def test_stopping_with_subscribers_behind_is_one_line_per_topic(capfd) -> None:
    async def scenario():
        hub = Hub(queue_size=2)
        subs = [hub.subscribe("busy") for _ in range(50)]
        for n in range(5):
            hub.publish("busy", b"%d" % n)
        hub.close_all()
        return [await sub.next() for sub in subs]

    assert run(scenario) == [None] * 50
    assert capfd.readouterr().err.splitlines() == [
        "topics: 50 subscribers were behind on topic 'busy' when the service stopped (each "
        "queue holds 2): 150 messages dropped"]


def test_a_queue_holds_at_least_one_message() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Hub(queue_size=0)
    assert DEFAULT_QUEUE_SIZE == 256


#: 10,000 subscriptions, each read by a task of its own as a stream handler would; one publish
#: reaches every one; then 300 more publishes while no reader runs (readers that never read:
#: every queue fills to its bound, the rest is dropped). RSS from /proc, in this process only.
MANY = textwrap.dedent('''
    import asyncio, json, sys

    from svc.runtime.db import close_all, db_open
    from svc.runtime.topics import start_topics

    def rss_mib():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024

    async def main(count):
        db = await db_open(":memory:")
        topics = await start_topics(db)
        before = rss_mib()
        subs = [await topics.subscribe("news") for _ in range(count)]
        got = []

        async def read(sub):
            got.append(await sub.next())

        readers = [asyncio.ensure_future(read(sub)) for sub in subs]
        await asyncio.sleep(0)
        reached = topics.publish("news", b'{"headline": "one publish, every subscriber"}')
        await asyncio.gather(*readers)
        for n in range(300):  # nobody reads now
            topics.publish("news", b'{"n": %d}' % n)
        queued = sum(sub.queued for sub in subs)
        after = rss_mib()
        print(json.dumps({"reached": reached, "got": len(got), "distinct": len(set(got)),
                          "queued": queued, "dropped": topics.hub.dropped,
                          "before": before, "after": after}))
        topics.stop()
        close_all()

    asyncio.run(main(int(sys.argv[1])))
''')


def test_ten_thousand_subscribers_one_publish_reaches_all_within_the_memory_bound() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    result = subprocess.run([sys.executable, "-c", MANY, "10000"], capture_output=True,
                            text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["reached"] == 10_000 and report["got"] == 10_000
    assert report["distinct"] == 1
    assert report["queued"] == 10_000 * DEFAULT_QUEUE_SIZE  # each at its bound, no further
    assert report["dropped"] == 10_000 * (300 - DEFAULT_QUEUE_SIZE)
    assert report["after"] < 200, report  # MiB, the whole process
    # the drops are one line for the topic at the stop, not 10,000
    assert result.stderr.count("topics:") == 1, result.stderr[-2000:]
