"""Topics in `SVC_WORKERS` processes: a service started before the fork is made fresh in the
worker (svc.runtime.services.after_fork, as svc.runtime.http.workers calls it): a publisher
id of its own, none of the parent's subscriptions, a bus of its own; and a message crosses
between the parent and the worker both ways. Run in a process of its own (it forks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.runtime.topics.instance import REPO

FORKED = textwrap.dedent('''
    import asyncio, json, os, signal, sys

    from svc.process import new_event_loop
    from svc.runtime import services
    from svc.runtime.db import close_all, db_open
    from svc.runtime.http.workers import _leave_parent_loop
    from svc.runtime.topics import start_topics

    async def worker(topics, parent_publisher, to_parent):
        report = {"own_publisher": topics.publisher != parent_publisher,
                  "inherited": sorted(topics.hub.topics), "counted": topics.published}
        sub = await topics.subscribe("t")
        os.write(to_parent, b"subscribed")
        report["got"] = (await asyncio.wait_for(sub.next(), 10)).decode()
        topics.publish("t", b'"from the worker"')
        await asyncio.sleep(0.5)  # sent before the worker ends
        return report

    async def parent(database):
        topics = await start_topics(await db_open(database))
        sub = await topics.subscribe("t")
        topics.publish("before the fork", b"{}")
        reports, to_parent = os.pipe()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        before = topics.publisher
        pid = os.fork()
        if pid == 0:  # the worker, as svc.runtime.http.workers starts one
            try:
                _leave_parent_loop(mask)
                loop = new_event_loop()
                asyncio.set_event_loop(loop)
                problem = loop.run_until_complete(services.after_fork())
                report = loop.run_until_complete(worker(topics, before, to_parent))
                report["problem"] = problem
                os.write(to_parent, b"\\n" + json.dumps(report).encode())
            finally:
                os._exit(0)
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, os.read, reports, 100) == b"subscribed"
        topics.publish("t", b'"from the parent"')
        mine = [(await sub.next()).decode(), (await asyncio.wait_for(sub.next(), 10)).decode()]
        text = b""
        while not text.startswith(b"\\n"):
            text += await loop.run_in_executor(None, os.read, reports, 10000)
        os.waitpid(pid, 0)
        report = json.loads(text)
        report["parent_got"] = mine
        print(json.dumps(report))
        topics.stop()
        close_all()

    asyncio.run(parent(sys.argv[1]))
''')


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_forked_worker_gets_a_fresh_service_and_messages_cross_both_ways(request, tmp_path,
                                                                          kind) -> None:
    if kind == "sqlite":
        database = str(tmp_path / "app.sqlite")
    else:
        database = request.getfixturevalue("postgres_cluster").create_database()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    result = subprocess.run([sys.executable, "-c", FORKED, database], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {"own_publisher": True, "inherited": [], "counted": 0,
                      "got": '"from the parent"',
                      "problem": None,
                      "parent_got": ['"from the parent"', '"from the worker"']}, report
    assert result.stderr == ""
