"""SVC_WORKERS=2 over real sockets: `svcc run` of tests/e2e/programs/workers.svc with two worker
processes sharing one SQLite file.

Which worker holds a connection is read from outside, as an administrator would: the server
side of every TCP connection on the port is a line of /proc/net/tcp whose socket inode appears
among one worker's open descriptors (/proc/<pid>/fd). So the tests see both workers take
connections without the program saying anything about itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from websockets.frames import Opcode

from tests.helpers.http_testkit import Client, open_ws, read_frame, send_frame
from tests.helpers.many_connections import ask_health, open_connections, raise_open_file_limit
from tests.helpers.svc_process import REPO, free_port, run_to_end, start, svcc

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc to see which worker holds a connection")

PROGRAM = REPO / "tests" / "e2e" / "programs" / "workers.svc"
LISTEN, ESTABLISHED = "0A", "01"


def start_workers(tmp_path: Path, count: str = "2", **env: str):
    return start([str(PROGRAM)], env={"SVC_WORKERS": count, "SVC_DB": str(tmp_path / "w.sqlite"),
                                      **env})


def start_on(database_url: str, count: str = "2"):
    """Two workers on `database_url`: an SQLite file or a PostgreSQL database."""
    return start([str(PROGRAM)], env={"SVC_WORKERS": count, "SVC_DB": database_url})


def worker_pids(pid: int) -> list[int]:
    """The worker processes of the supervisor `pid` (its children)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        return sorted(int(p) for p in children.read_text().split())
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return sorted(found)


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def server_sockets(port: int, state: str) -> list[tuple[int, str]]:
    """(client port, or 0 for a listening socket; inode) of the server's sockets on `port`."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, st, inode = fields[1], fields[2], fields[3], fields[9]
        if st == state and int(local.split(":")[1], 16) == port:
            found.append((int(remote.split(":")[1], 16), inode))
    return found


def owners(port: int, pids: list[int], state: str = ESTABLISHED) -> dict[int, int]:
    """{client port: the worker pid holding the server side of that connection}."""
    by_inode = {inode: pid for pid in pids for inode in socket_inodes(pid)}
    return {client: by_inode[inode] for client, inode in server_sockets(port, state)
            if inode in by_inode}


def listening_workers(port: int, pids: list[int]) -> set[int]:
    by_inode = {inode: pid for pid in pids for inode in socket_inodes(pid)}
    return {by_inode[inode] for _, inode in server_sockets(port, LISTEN) if inode in by_inode}


def http(client: Client, method: str, path: str, body: object = None):
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(data)}\r\n"
    if body is not None:
        head += "Content-Type: application/json\r\n"
    client.send((head + "\r\n").encode() + data)
    return client.response()


def local_port(client: Client) -> int:
    return client.sock.getsockname()[1]


def open_clients(port: int, count: int) -> list[Client]:
    """`count` keep-alive connections, each answered once (so each is accepted by a worker)."""
    clients = [Client(port) for _ in range(count)]
    for client in clients:
        assert http(client, "GET", "/health").status == 200
    return clients


def clients_on_every_worker(port: int, pids: list[int], count: int) -> list[Client]:
    """`count` keep-alive connections, as many held by each worker: the kernel spreads
    connections at random, so 8 can all land on one (1 in 128); more are opened (at most 64)
    and the extras closed."""
    clients = open_clients(port, count)
    for _ in range(64):
        held = owners(port, pids)
        by_worker = {pid: [c for c in clients if held.get(local_port(c)) == pid] for pid in pids}
        if all(len(mine) >= count // len(pids) for mine in by_worker.values()):
            chosen = [c for mine in by_worker.values() for c in mine[:count // len(pids)]]
            for client in clients:
                if client not in chosen:
                    client.close()
            return chosen
        clients += open_clients(port, 1)
    raise AssertionError(f"64 connections and one worker holds too few: {held}")


def test_two_workers_answer_every_route_with_one_listening_line(tmp_path):
    server = start_workers(tmp_path)
    try:
        pids = worker_pids(server.process.pid)
        assert len(pids) == 2 and listening_workers(server.port, pids) == set(pids)
        for _round in range(6):  # fresh connections: both workers get some
            note = server.request("POST", "/notes", {"text": "hello"}).json()
            assert server.request("GET", f"/notes/{note['id']}").json() == note
            assert server.request("GET", "/notes/999999").status == 404
            assert server.request("POST", "/transfer").json() == {"total": 1_000_000}
            assert server.request("GET", "/slow?ms=5").json() == "slept 5"
            assert server.request("GET", "/health").status == 200
            stream = server.request("GET", "/stream")
            assert stream.body == b"".join(f"chunk:{i}\n".encode() for i in range(5))
            with open_ws(server.port) as ws:
                send_frame(ws, Opcode.TEXT, b"echo me")
                assert read_frame(ws).data == b"echo me"
        assert server.request("GET", "/notes/count").json() == {"total": 6}
        assert server.request("GET", "/accounts/2").json() == {"id": 2, "balance": 6}
    finally:
        assert server.stop() == 0, "".join(server.stderr)
    assert [line for line in server.stdout if line.startswith("listening")] == [
        f"listening on http://127.0.0.1:{server.port}\n"]


def test_both_workers_take_connections(tmp_path):
    server = start_workers(tmp_path)
    clients = open_clients(server.port, 64)
    try:
        pids = worker_pids(server.process.pid)
        held = owners(server.port, pids)
        mine = {local_port(c) for c in clients}
        counts = {pid: sum(1 for client, owner in held.items() if owner == pid and client in mine)
                  for pid in pids}
        assert sum(counts.values()) == 64
        assert min(counts.values()) >= 8, counts  # a hash split of 64: 32 +- 4 each
    finally:
        for client in clients:
            client.close()
        assert server.stop() == 0


def test_concurrent_writes_and_transactions_through_both_workers_lose_nothing(database_url):
    server = start_on(database_url)
    # 8 clients: enough to interleave both workers, few enough that a queued request meets
    # the 2 s processing limit on a loaded machine (16 queued 504s under a parallel build)
    threads, rounds = 8, 40
    pids = worker_pids(server.process.pid)
    clients = clients_on_every_worker(server.port, pids, threads)
    acked: list[tuple[int, str]] = []
    failures: list[str] = []

    def write(n: int, client: Client) -> None:
        for i in range(rounds):
            text = f"{n}-{i}"
            answer = http(client, "POST", "/notes", {"text": text})
            moved = http(client, "POST", "/transfer")
            if answer.status != 200 or moved.status != 200:
                failures.append(f"{answer.status} {moved.status} {answer.body!r}")
                return
            acked.append((answer.json()["id"], text))
            if moved.json() != {"total": 1_000_000}:
                failures.append(f"sum changed: {moved.body!r}")

    try:
        held = owners(server.port, pids)
        assert {held[local_port(c)] for c in clients} == set(pids)  # both workers write
        workers = [threading.Thread(target=write, args=(n, c)) for n, c in enumerate(clients)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        # with a failure, what the server logged besides its access lines
        assert failures == [], (failures, [line for line in server.log().splitlines()
                                           if not line.startswith(("POST /notes 2",
                                                                   "POST /transfer 2"))][:20])
        assert len(acked) == threads * rounds and len({i for i, _ in acked}) == len(acked)
        assert server.request("GET", "/notes/count").json() == {"total": threads * rounds}
        for note_id, text in acked:
            assert http(clients[0], "GET", f"/notes/{note_id}").json() == {"id": note_id,
                                                                          "text": text}
        assert server.request("GET", "/accounts/2").json() == {"id": 2,
                                                               "balance": threads * rounds}
    finally:
        for client in clients:
            client.close()
        assert server.stop() == 0, "".join(server.stderr)


def test_a_killed_worker_is_replaced_within_a_second_and_the_other_is_undisturbed(tmp_path):
    server = start_workers(tmp_path)
    clients = open_clients(server.port, 16)
    pids = worker_pids(server.process.pid)
    held = owners(server.port, pids)
    victim, survivor = pids
    acked: list[tuple[int, str]] = []
    errors: dict[int, list[str]] = {pid: [] for pid in pids}
    stop = threading.Event()

    def write(n: int, client: Client) -> None:
        owner, i = held[local_port(client)], 0
        while not stop.is_set():
            text = f"{n}-{i}"
            try:
                answer = http(client, "POST", "/notes", {"text": text})
            except (OSError, AssertionError) as exc:
                errors[owner].append(repr(exc))
                return
            if answer.status != 200:
                errors[owner].append(f"{answer.status}")
                return
            acked.append((answer.json()["id"], text))
            i += 1

    writers = [threading.Thread(target=write, args=(n, c)) for n, c in enumerate(clients)]
    try:
        assert {held[local_port(c)] for c in clients} == set(pids)
        for writer in writers:
            writer.start()
        time.sleep(1.2)  # the victim has lived past a second: replaced at once
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        started = set()  # the supervisor forks a new worker within a second (0.1 s polls);
        # the bounds are twice and ten times that, so a busy machine does not fail the test
        while time.monotonic() - killed < 2.0 and not started:
            started = set(worker_pids(server.process.pid)) - {survivor, victim}
            time.sleep(0.02)
        assert started, "no new worker started within two seconds"
        replaced = set()
        while time.monotonic() - killed < 10.0 and not replaced:
            now = worker_pids(server.process.pid)
            replaced = listening_workers(server.port, now) - {survivor, victim}
            time.sleep(0.02)
        assert replaced, "the new worker was not listening within ten seconds"
        time.sleep(0.5)
        stop.set()
        for writer in writers:
            writer.join(30)
        assert errors[survivor] == []  # the other worker's requests were not disturbed
        for _ in range(20):  # new connections reach the living workers
            assert server.request("GET", "/health").status == 200
        for note_id, text in acked:  # every acknowledged write is there
            assert server.request("GET", f"/notes/{note_id}").json() == {"id": note_id,
                                                                        "text": text}
        assert f"worker {victim} killed by signal 9; starting a new one" in server.log(
            until="signal 9")
    finally:
        stop.set()
        for client in clients:
            client.close()
        assert server.stop() == 0, "".join(server.stderr)


def test_sigterm_lets_requests_in_flight_on_both_workers_finish(tmp_path):
    server = start_workers(tmp_path)
    pids = worker_pids(server.process.pid)
    clients = open_clients(server.port, 12)
    answers: list[object] = []

    def slow(client: Client) -> None:
        try:
            answers.append(http(client, "GET", "/slow?ms=800").json())
        except Exception as exc:  # noqa: BLE001 - recorded and asserted below
            answers.append(repr(exc))

    held = owners(server.port, pids)
    assert {held[local_port(c)] for c in clients} == set(pids)
    requests = [threading.Thread(target=slow, args=(c,)) for c in clients]
    for request in requests:
        request.start()
    time.sleep(0.3)
    server.process.send_signal(signal.SIGTERM)
    for request in requests:
        request.join(15)
    for client in clients:
        client.close()
    assert answers == ["slept 800"] * 12
    assert server.process.wait(15) == 0
    time.sleep(0.1)
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []  # no worker left
    with socket.socket() as probe:  # and the port is free again
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", server.port))


async def _hold(port: int, count: int) -> list[tuple]:
    streams = await open_connections(port, count)
    assert await ask_health(streams) == [b"HTTP/1.1 200 OKok"] * count
    return streams


def test_ten_thousand_connections_are_spread_over_the_workers(tmp_path):
    count = 10_000
    soft, hard = raise_open_file_limit(count + 100)
    server = start_workers(tmp_path, SVC_HTTP_REQUEST_WAIT_SECONDS="60", SVC_LOG="quiet")
    loop = asyncio.new_event_loop()
    try:
        started = time.monotonic()
        streams = loop.run_until_complete(_hold(server.port, count))
        pids = worker_pids(server.process.pid)
        held = owners(server.port, pids)
        counts = {pid: sum(1 for owner in held.values() if owner == pid) for pid in pids}
        assert sum(counts.values()) == count
        assert min(counts.values()) >= count // 4, counts  # a hash split: about half each
        assert time.monotonic() - started < 60
        for _reader, writer in streams:
            writer.close()
    finally:
        loop.close()
        assert server.stop() == 0
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_one_worker_is_the_plain_server_without_a_supervisor(tmp_path):
    server = start_workers(tmp_path, count="1")
    try:
        assert worker_pids(server.process.pid) == []
        assert listening_workers(server.port, [server.process.pid]) == {server.process.pid}
    finally:
        assert server.stop() == 0


def test_auto_starts_one_worker_per_cpu_this_process_may_use(tmp_path):
    server = start_workers(tmp_path, count="auto")
    try:
        expected = len(os.sched_getaffinity(0))
        assert len(worker_pids(server.process.pid)) == (expected if expected > 1 else 0)
    finally:
        assert server.stop() == 0


def test_auto_follows_the_affinity_mask(tmp_path):
    """`taskset -c 0` leaves one CPU: one worker, which is the plain server."""
    env = {**os.environ, "SVC_WORKERS": "auto", "SVC_DB": str(tmp_path / "w.sqlite"),
           "SVC_PORT": str(free_port())}
    process = subprocess.Popen(["taskset", "-c", "0", *svcc(), "run", str(PROGRAM)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().startswith("listening on")
        assert worker_pids(process.pid) == []
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5", "", "2 workers"])
def test_a_bad_value_is_a_startup_error_naming_the_variable(tmp_path, value):
    result = run_to_end(["run", str(PROGRAM)], env={"SVC_WORKERS": value, "SVC_PORT": "0",
                                                    "SVC_DB": str(tmp_path / "w.sqlite")})
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (f"error: SVC_WORKERS must be a positive integer or 'auto' "
                             f"(got {value!r})\n")


def test_an_in_memory_database_with_two_workers_is_a_startup_error():
    result = run_to_end(["run", str(REPO / "examples" / "hello" / "hello.svc")],
                        env={"SVC_WORKERS": "2", "SVC_PORT": "0"})
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("error: SVC_WORKERS above 1 cannot serve an in-memory database "
                             "(:memory:): each worker would see a different one; use a "
                             "database file\n")


def test_a_taken_port_is_a_startup_error_and_no_worker_starts(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run_to_end(["run", str(PROGRAM)],
                            env={"SVC_WORKERS": "2", "SVC_PORT": str(port),
                                 "SVC_DB": str(tmp_path / "w.sqlite")})
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"error: port {port} is already in use\n"


def test_a_system_without_fork_refuses_more_than_one_worker(tmp_path):
    """As on Windows: the same svcc, in a Python whose os module has no fork."""
    without_fork = "import os, sys; del os.fork; from svc.cli import main; sys.exit(main())"
    env = {**os.environ, "SVC_WORKERS": "2", "SVC_PORT": "0",
           "SVC_DB": str(tmp_path / "w.sqlite")}
    result = subprocess.run([sys.executable, "-c", without_fork, "run", str(PROGRAM)],
                            env=env, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == ("error: SVC_WORKERS above 1 needs an operating system that can "
                             "fork worker processes, and this one cannot\n")


def test_ctrl_c_to_the_terminal_stops_every_worker_once(tmp_path):
    """Ctrl+C reaches the supervisor and the workers together (one process group): all stop,
    none is taken for dead and replaced, exit 0."""
    env = {**os.environ, "SVC_WORKERS": "2", "SVC_PORT": "0", "SVC_DB": str(tmp_path / "w.sqlite")}
    process = subprocess.Popen([*svcc(), "run", str(PROGRAM)], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stdout.readline().startswith("listening on")
    pids = worker_pids(process.pid)
    assert len(pids) == 2
    os.killpg(process.pid, signal.SIGINT)
    _out, err = process.communicate(timeout=15)
    assert (process.returncode, err) == (0, "")
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []
