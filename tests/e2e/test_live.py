"""Topics and event streams as a program uses them (tests/e2e/programs/live.svc), on real
`svcc run` processes over real sockets: typed events, a refusal before the stream, the
Last-Event-ID, a subscription that ends with its client, a message too large, and two
programs on one SQLite file (the topic crosses processes; a message that does not decode as
the subscriber's class is skipped with a warn line)."""

from __future__ import annotations

import json
import time

import pytest

from tests.helpers.event_stream import Stream, events
from tests.helpers.svc_process import REPO, free_port, start
from tests.helpers.jobs_db import wait_for

PROGRAM = REPO / "tests" / "e2e" / "programs" / "live.svc"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the tests that need nothing of their own (each reads its own streams)."""
    folder = tmp_path_factory.mktemp("live")
    running = start([str(PROGRAM)], env={"SVC_DB": str(folder / "live.sqlite")})
    yield running
    assert running.stop() == 0


def listening(port: int, target: str = "/notes/live", headers=None) -> tuple[Stream, dict]:
    """A stream whose first event (its subscription is live) has arrived."""
    stream = Stream(port, target, headers)
    head = stream.head()
    assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
    assert stream.chunk() == b"retry: 2000\n\n"
    [first] = events(stream.chunk())
    assert first["event"] == "listening"
    return stream, json.loads(first["data"])


def next_event(stream: Stream) -> dict:
    [event] = events(stream.chunk())
    return event


def test_published_notes_arrive_as_typed_events_in_order(server):
    a, _ = listening(server.port)
    b, _ = listening(server.port)
    for n in range(1, 4):
        assert server.request("POST", "/notes", {"id": n, "text": f"note {n}"}).status == 204
    for stream in (a, b):
        got = [next_event(stream) for _ in range(3)]
        assert [e["id"] for e in got] == ["1", "2", "3"]
        assert {e["event"] for e in got} == {"note"}
        assert json.loads(got[2]["data"]) == {"id": 3, "text": "note 3"}
        stream.close()


def test_a_refusal_before_the_first_event_is_an_ordinary_answer(server):
    answer = server.request("GET", "/notes/live?refuse=true")
    assert answer.status == 404 and answer.json() == {"error": "no such stream"}
    assert server.request("GET", "/notes/live?refuse=maybe").status == 400


def test_a_guard_runs_before_the_stream_and_its_value_reaches_the_handler(server):
    refused = server.request("GET", "/notes/mine")
    assert refused.status == 401 and refused.json() == {"error": "sign in to read"}
    stream, first = listening(server.port, "/notes/mine", {"Authorization": "ada"})
    assert first["text"] == "listening for ada"
    assert stream.chunk() == b""  # the handler returned: the stream ended properly
    stream.close()


def test_the_handler_reads_the_last_event_id(server):
    stream, first = listening(server.port, headers={"Last-Event-ID": "41"})
    assert first["text"] == "resumed after 41"
    stream.close()


def test_a_message_over_1_mib_is_refused_and_nothing_is_sent(server):
    stream, _ = listening(server.port)
    answer = server.request("POST", "/big", {"id": 0, "text": "x" * 1_100_000})
    assert answer.status == 400 and "at most 1048576 bytes" in answer.json()["error"]
    assert server.request("POST", "/notes", {"id": 9, "text": "after"}).status == 204
    assert next_event(stream)["id"] == "9"  # the big one never came
    stream.close()


def test_a_client_that_leaves_ends_its_subscription(tmp_path):
    """The handler is cancelled when its client leaves; its subscription goes with it (the
    metrics' subscriber gauge comes back to 0)."""
    metrics = free_port()
    server = start([str(PROGRAM)], env={"SVC_DB": str(tmp_path / "live.sqlite"),
                                        "SVC_METRICS_PORT": str(metrics)})
    try:
        from tests.e2e.test_logs_and_metrics import samples
        streams = [listening(server.port)[0] for _ in range(3)]
        key = ("svc_topic_subscribers", (("topic", "notes"),))
        assert samples(metrics)[key] == 3
        for stream in streams:
            stream.close()
        wait_for(lambda: samples(metrics).get(key, 0) == 0, timeout=10)
    finally:
        assert server.stop() == 0


OTHER_VERSION = '''
class Note:
    id: str

NOTES: Topic[Note] = topic("notes")

@post("/notes/{id}")
async def add(db: Db, id: str) -> Result[unit, Error]:
    return await publish(db, NOTES, Note(id=id))

async def main() -> Result[unit, Error]:
    db = try await db_open(env("SVC_DB", "live.sqlite"))
    return await serve(db, try parse_i64(env("SVC_PORT", "8080")))
'''


def test_two_programs_on_one_sqlite_file_share_the_topic(tmp_path):
    """Another program (another version: its Note's id is a str) publishes on the same file:
    what decodes as this program's Note arrives, the rest is skipped with a warn line."""
    database = str(tmp_path / "live.sqlite")
    other_file = tmp_path / "other.svc"
    other_file.write_text(OTHER_VERSION)
    server = start([str(PROGRAM)], env={"SVC_DB": database})
    other = start([str(other_file)], env={"SVC_DB": database})
    try:
        stream, _ = listening(server.port)
        assert other.request("POST", "/notes/seven").status == 204  # id "seven": not a Note here
        assert server.request("POST", "/notes", {"id": 8, "text": "mine"}).status == 204
        assert next_event(stream)["id"] == "8"
        assert "does not decode as the subscriber's type" in server.log("does not decode")
        stream.close()
    finally:
        assert server.stop() == 0
        assert other.stop() == 0
