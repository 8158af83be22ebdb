"""WebSocket routes as a program writes them (tests/e2e/programs/live_ws.svc), on a real
`svcc run` process, spoken to with the `websockets` client: typed messages through a topic
(`ws_forward`), one that does not decode (1007), a guard's refusal before the upgrade, and a
handler's own close code. The runtime's cases are tests/runtime/http/test_sockets.py's."""

from __future__ import annotations

import json

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.helpers.svc_process import REPO, start

PROGRAM = REPO / "tests" / "e2e" / "programs" / "live_ws.svc"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("live_ws") / "live.sqlite"
    running = start([str(PROGRAM)], env={"SVC_DB": str(db)})
    yield running
    assert running.stop() == 0


def closed_with(ws) -> tuple[int, str]:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=5)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code, closed.value.rcvd.reason


def test_a_chat_through_a_topic(server):
    url = f"ws://127.0.0.1:{server.port}/rooms/blue/chat"
    with connect(url) as ada, connect(url) as bob:
        ada.send(json.dumps({"text": "hi"}))
        for ws in (ada, bob):  # both are forwarded the topic's line
            assert json.loads(ws.recv(timeout=5)) == {"n": 1, "text": "blue: hi"}
        bob.send('{"text": 7}')  # not a Said
        code, reason = closed_with(bob)
        assert code == 1007 and "text" in reason
    assert "does not decode (closed with 1007)" in server.log("closed with 1007")


def test_a_guard_refuses_before_the_upgrade(server):
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://127.0.0.1:{server.port}/private")
    assert refused.value.response.status_code == 401
    assert json.loads(refused.value.response.body) == {"error": "sign in to talk"}


def test_a_handler_closes_with_its_own_code(server):
    with connect(f"ws://127.0.0.1:{server.port}/private",
                 additional_headers={"Authorization": "ada"}) as ws:
        assert ws.recv(timeout=5) == b"hello ada"
        ws.send(b"12345")
        assert closed_with(ws) == (4000, "got 5 bytes")
    assert "GET /private 101 " in server.log("GET /private 101")
