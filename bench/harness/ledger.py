"""The contention workload of issue 38, for the bench's contention section (contention.py)
and tests/e2e/test_contention.py: 4 accounts, transfers between random pairs sent by 32
concurrent clients to one or more instances of bench/ledger.svc, each client on its own
keep-alive connection. It counts the answers by status and error message, and reads back the
totals.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PROGRAM = Path(__file__).resolve().parents[1] / "ledger.svc"
ACCOUNTS = 4
OPENING_BALANCE = 1000


@dataclass
class Outcome:
    answers: Counter = field(default_factory=Counter)  # (status, error message or "") -> n
    seconds: float = 0.0

    @property
    def sent(self) -> int:
        return sum(self.answers.values())

    def count(self, status: int) -> int:
        return sum(n for (s, _), n in self.answers.items() if s == status)

    def share_ok(self) -> float:
        return self.count(200) / self.sent


def open_accounts(port: int) -> None:
    for account in range(1, ACCOUNTS + 1):
        status, body = _post(http.client.HTTPConnection("127.0.0.1", port, timeout=10),
                             f"/accounts/{account}/{OPENING_BALANCE}", None)
        assert 200 <= status < 300, body


def totals(port: int) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/total")
    answer = conn.getresponse()
    return json.loads(answer.read())


#: The ledger's ways to move money: rows locked in request order, or in id order; and in
#: request order after a log line (so not run again after a clash).
REQUEST_ORDER, ID_ORDER, LOGGED = "/transfers", "/transfers-in-order", "/transfers-logged"


def run(ports: list[int], path: str = REQUEST_ORDER, transfers: int = 300, clients: int = 32,
        seed: int = 38) -> Outcome:
    """`transfers` transfers from `clients` threads, client i talking to ports[i % len]."""
    rng = random.Random(seed)
    moves = []
    for _ in range(transfers):
        source, target = rng.sample(range(1, ACCOUNTS + 1), 2)
        moves.append({"source": source, "target": target, "amount": rng.randint(1, 200)})
    outcome = Outcome()
    lock = threading.Lock()

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", ports[i % len(ports)], timeout=30)
        try:
            for move in moves[i::clients]:
                status, body = _post(conn, path, move)
                reason = "" if status == 200 else json.loads(body).get("error", "")
                with lock:
                    outcome.answers[(status, reason)] += 1
        finally:
            conn.close()

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    outcome.seconds = time.monotonic() - started
    return outcome


def _post(conn: http.client.HTTPConnection, path: str, body) -> tuple[int, bytes]:
    raw = None if body is None else json.dumps(body).encode()
    headers = {} if raw is None else {"Content-Type": "application/json"}
    conn.request("POST", path, body=raw, headers=headers)
    answer = conn.getresponse()
    return answer.status, answer.read()
