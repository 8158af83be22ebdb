"""One svc instance for the topics tests: a real OS process that starts the topics service on
a database and obeys commands, and the handle the tests drive it with (`Instance`).

Run as a script (`python -m tests.runtime.topics.instance DATABASE`), it reads one JSON
command a line on stdin and answers one JSON object a line on stdout:

    {"do": "subscribe", "topic": T}    → {"subscribed": T}, then {"got": T, "from": NAME,
                                          "n": N, "size": BYTES} for each message it receives
    {"do": "publish", "topic": T, "count": C, "size": S}
                                       → {"published": C} (messages {"from": NAME, "n": N},
                                          N counting this instance's messages from 1, padded
                                          to about S bytes)
    {"do": "stats"}                    → {"stats": {...}} (the service's counts)

Its first line is {"ready": PUBLISHER, "pid": PID}; the service's log lines go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[3]


# --- the instance ---------------------------------------------------------------------------

def _say(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def _serve(database: str, name: str) -> None:
    from svc.runtime.db import close_all, db_open
    from svc.runtime.topics import start_topics

    db = await db_open(database)
    topics = await start_topics(db)
    if not hasattr(topics, "publish"):
        _say({"error": str(topics)})
        return
    _say({"ready": topics.publisher, "pid": os.getpid()})
    readers: list[asyncio.Task] = []
    numbered = 0  # the messages this instance published, all topics

    async def read(subscription) -> None:
        async for payload in subscription:
            message = json.loads(payload)
            _say({"got": subscription.topic, "from": message["from"], "n": message["n"],
                  "size": len(payload)})

    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    while line := await stdin.readline():
        command = json.loads(line)
        if command["do"] == "subscribe":
            subscription = await topics.subscribe(command["topic"])
            readers.append(loop.create_task(read(subscription)))
            _say({"subscribed": command["topic"]})
        elif command["do"] == "publish":
            pad = "x" * command.get("size", 0)
            for _ in range(command["count"]):
                numbered += 1
                body = json.dumps({"from": name, "n": numbered, "pad": pad}).encode()
                topics.publish(command["topic"], body)
                if numbered % 64 == 0:  # let the readers run, as handlers between requests do
                    await asyncio.sleep(0)
            _say({"published": command["count"]})
        elif command["do"] == "stats":
            _say({"stats": {"published": topics.published, "dropped": topics.dropped(),
                            "bus_up": topics.bus_up,
                            "received": 0 if topics.bus is None else topics.bus.received}})
    topics.stop()
    await asyncio.gather(*readers, return_exceptions=True)
    close_all()


# --- the handle the tests hold ------------------------------------------------------------------

class Instance:
    """An instance process: commands in, its stdout lines as dicts, its stderr lines kept."""

    def __init__(self, database: str, name: str, env: dict[str, str] | None = None) -> None:
        self.name = name
        path = os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.runtime.topics.instance", database, name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=REPO, env={**os.environ, "PYTHONPATH": path, **(env or {})})
        self.lines: queue.Queue[dict] = queue.Queue()
        self.seen: list[dict] = []
        self.errors: list[str] = []
        self._drains = [threading.Thread(target=self._drain_stdout, daemon=True),
                        threading.Thread(target=self._drain_stderr, daemon=True)]
        for thread in self._drains:
            thread.start()
        ready = self.wait_for(lambda line: "ready" in line or "error" in line, timeout=30)
        assert "ready" in ready, (ready, self.errors)
        self.publisher, self.pid = ready["ready"], ready["pid"]

    def _drain_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line.rstrip("\n"))

    def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def wait_for(self, matches: Callable[[dict], bool], timeout: float = 15) -> dict:
        """The next line that `matches` (lines before it are kept in `seen`)."""
        give_up = time.monotonic() + timeout
        while True:
            left = give_up - time.monotonic()
            try:
                line = self.lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                raise AssertionError(f"{self.name}: nothing matching within {timeout} s; "
                                     f"seen {self.seen[-5:]}, stderr {self.errors[-5:]}")
            self.seen.append(line)
            if matches(line):
                return line

    def subscribe(self, topic: str) -> None:
        self.send(do="subscribe", topic=topic)
        self.wait_for(lambda line: line.get("subscribed") == topic)

    def publish(self, topic: str, count: int = 1, size: int = 0) -> None:
        self.send(do="publish", topic=topic, count=count, size=size)
        self.wait_for(lambda line: "published" in line)

    def received(self, topic: str, sender: str, count: int, timeout: float = 15) -> list[dict]:
        """Wait for `count` messages of `sender` on `topic`; them, in arrival order."""
        def got() -> list[dict]:
            return [line for line in self.seen
                    if line.get("got") == topic and line.get("from") == sender]
        give_up = time.monotonic() + timeout
        while len(got()) < count:
            self.wait_for(lambda line: "got" in line, timeout=max(give_up - time.monotonic(),
                                                                   0.01))
        return got()

    def stats(self) -> dict:
        self.send(do="stats")
        return self.wait_for(lambda line: "stats" in line)["stats"]

    def stop(self) -> int:
        """Close its stdin (it stops its service and exits); its exit status."""
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            status = self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
        self._close_pipes()
        return status

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        """Once the process is gone: its output read to the end, every pipe closed."""
        for thread in self._drains:
            thread.join(timeout=5)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except OSError:  # stdin of a killed process: the flush has nowhere to go
                    pass


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], sys.argv[2]))
