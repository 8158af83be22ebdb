"""Logs, request ids and metrics through `svcc run`, over real sockets on 127.0.0.1:
tests/e2e/programs/observability.svc, with one process and with SVC_WORKERS=2.

The metrics are scraped as Prometheus would (GET /metrics on SVC_METRICS_PORT) and read with the
client library's own parser; the counts must equal the requests sent. The in-process side of the
same behaviour (every status, every format detail) is
tests/runtime/observability/test_logs_and_metrics.py.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.svc_process import REPO, free_port, run_to_end, start, svcc

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

PROGRAM = REPO / "tests" / "e2e" / "programs" / "observability.svc"
GENERATED_ID = re.compile(r"^[0-9a-f]{12}-\d+$")


def start_program(tmp_path: Path, **env: str):
    return start([str(PROGRAM)], env={"SVC_DB": str(tmp_path / "o.sqlite"), **env})


def json_lines(text: str) -> list[dict]:
    """Every stderr line as JSON (a line that is not JSON fails the test)."""
    return [json.loads(line) for line in text.splitlines() if line]


def scrape(port: int, accept: str | None = None) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics", headers={"Accept": accept} if accept else {})
        answer = conn.getresponse()
        return (answer.status, {k.lower(): v for k, v in answer.getheaders()},
                answer.read().decode())
    finally:
        conn.close()


def samples(port: int) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of a scrape, parsed by prometheus_client."""
    status, _headers, text = scrape(port)
    assert status == 200
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def requests_total(found: dict, route: str, method: str, status: str) -> float:
    return found.get(("svc_http_requests_total",
                      (("method", method), ("route", route), ("status", status))), 0)


def wait_until(condition, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


# --- logs and request ids ------------------------------------------------------------------------


def test_json_logs_name_each_request_by_the_id_its_answer_carries(tmp_path):
    server = start_program(tmp_path, SVC_LOG_FORMAT="json")
    try:
        hello = server.request("GET", "/hello/ada?x=1")
        brought = server.request("GET", "/later/20", headers={"X-Request-Id": "proxy-7f3a"})
        invalid = server.request("GET", "/hello/bo", headers={"X-Request-Id": "two words"})
        fault = server.request("GET", "/ratio/1/0")
        database = server.request("GET", "/missing")
        nowhere = server.request("GET", "/nowhere")
        assert [r.status for r in (hello, brought, invalid, fault, database, nowhere)] == \
            [200, 200, 200, 500, 500, 404]
        ids = [r.headers["x-request-id"] for r in (hello, brought, invalid, fault, database,
                                                   nowhere)]
        assert ids[1] == "proxy-7f3a"
        assert all(GENERATED_ID.match(i) for n, i in enumerate(ids) if n != 1), ids
        assert len(set(ids)) == 6
        assert b"two words" not in invalid.body
        server.log(until=ids[-1])
    finally:
        assert server.stop() == 0
    lines = json_lines("".join(server.stderr))
    assert lines[0]["message"] == "starting" and lines[0]["fields"] == {"version": "1"}
    assert "request_id" not in lines[0]  # main runs outside any request
    access = {o["request_id"]: o for o in lines if o["message"] == "request"}
    assert access[ids[0]]["route"] == "/hello/{name}" and access[ids[0]]["query"] == "x=1"
    assert access[ids[0]]["client"].startswith("127.0.0.1:")
    assert access[ids[1]]["route"] == "/later/{ms}" and access[ids[1]]["duration_ms"] >= 20
    assert access[ids[5]]["route"] is None and access[ids[5]]["status"] == 404
    said = [o for o in lines if o["message"] == "saying hello"]
    assert [o["request_id"] for o in said] == [ids[0], ids[2]]
    assert said[0]["level"] == "info"
    assert said[0]["fields"] == {"name": "ada", "level": "a field, not the level"}
    (slept,) = [o for o in lines if o["message"] == "slept"]
    assert slept["level"] == "warn" and slept["request_id"] == "proxy-7f3a"
    (fault_line,) = [o for o in lines if o["message"] == "internal error"]
    assert fault_line["request_id"] == ids[3] and fault_line["route"] == "/ratio/{a}/{b}"
    assert re.fullmatch(r"division by zero \(at .*observability\.svc:\d+, in \w+\)",
                        fault_line["fault"]), fault_line["fault"]
    (database_line,) = [o for o in lines if o["message"].startswith("database error")]
    assert database_line["request_id"] == ids[4] and database_line["level"] == "error"
    assert "no such table: no_such_table (in SQL: SELECT n FROM no_such_table)" in \
        database_line["message"]


def test_text_logs_give_ids_only_to_requests_that_need_one(tmp_path):
    server = start_program(tmp_path)
    try:
        plain = server.request("GET", "/ratio/6/3")
        brought = server.request("GET", "/ratio/6/2", headers={"X-Request-Id": "abc"})
        fault = server.request("GET", "/ratio/1/0")
        logged = server.request("GET", "/hello/ada")
        assert "x-request-id" not in plain.headers
        assert brought.headers["x-request-id"] == "abc"
        fault_id, logged_id = fault.headers["x-request-id"], logged.headers["x-request-id"]
        log = server.log(until=f"/hello/ada 200")
    finally:
        assert server.stop() == 0
    assert re.search(r"^GET /ratio/6/3 200 \d+\.\dms$", log, re.M)
    assert re.search(r"^GET /ratio/6/2 200 \d+\.\dms request_id=abc$", log, re.M)
    assert f"GET /ratio/1/0: internal error request_id={fault_id}\nTraceback" in log
    assert re.search(rf"^GET /ratio/1/0 500 \d+\.\dms request_id={fault_id}$", log, re.M)
    assert f'INFO saying hello name=ada level="a field, not the level" request_id={logged_id}' \
        in log
    assert log.splitlines()[0] == "INFO starting version=1"


def _upgrade(port: int, request_id: str | None) -> tuple[str, dict[str, str]]:
    """A WebSocket upgrade of /ws: the status line and header fields of the answer."""
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    extra = f"X-Request-Id: {request_id}\r\n" if request_id else ""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                      f"Sec-WebSocket-Version: 13\r\n{extra}\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            assert chunk, head
            head += chunk
    status, *fields = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
    return status, {k.lower(): v.strip() for k, v in (f.split(":", 1) for f in fields)}


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_websocket_upgrade_answer_carries_the_request_id(tmp_path, log_format):
    server = start_program(tmp_path, SVC_LOG_FORMAT=log_format)
    try:
        status, brought = _upgrade(server.port, "ws-7")
        _, none_brought = _upgrade(server.port, None)
        log = server.log(until="ws-7")
    finally:
        assert server.stop() == 0
    assert status.startswith("HTTP/1.1 101") and brought["x-request-id"] == "ws-7"
    if log_format == "json":
        made = none_brought["x-request-id"]
        assert GENERATED_ID.match(made)
        access = [o for o in json_lines(log) if o["message"] == "request"]
        assert {o["request_id"] for o in access if o["status"] == 101} == {"ws-7", made}
    else:  # text logs give an id only to a request that brought one
        assert "x-request-id" not in none_brought
        assert re.search(r"^GET /ws 101 \d+\.\dms request_id=ws-7$", log, re.M)


def test_quiet_json_logs_keep_errors_and_the_program_s_lines(tmp_path):
    server = start_program(tmp_path, SVC_LOG_FORMAT="json", SVC_LOG="quiet")
    try:
        server.request("GET", "/hello/ada")
        server.request("GET", "/ratio/1/0")
        server.log(until="internal error")
    finally:
        assert server.stop() == 0
    messages = [o["message"] for o in json_lines("".join(server.stderr))]
    assert messages == ["starting", "saying hello", "internal error"]


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("value", ["yaml", "", "json,text"])
def test_a_bad_log_format_stops_the_program_at_start(tmp_path, workers, value):
    result = run_to_end(["run", str(PROGRAM)], env={
        "SVC_LOG_FORMAT": value, "SVC_WORKERS": workers, "SVC_PORT": str(free_port()),
        "SVC_DB": str(tmp_path / "o.sqlite")})
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == \
        f"error: SVC_LOG_FORMAT must be 'text' or 'json' (got {value!r})"
    assert "Traceback" not in result.stderr and "listening" not in result.stdout


def test_log_lines_of_svcc_test_go_to_stderr(tmp_path):
    (tmp_path / "shop.svc").write_text(
        "def ship(id: i64) -> i64:\n"
        "    let fields: Map[str, str] = Map()\n"
        "    set(fields, \"order\", str(id))\n"
        "    log_info(\"shipping\", fields)\n"
        "    return id\n\n"
        "def main():\n    pass\n")
    (tmp_path / "shop_test.svc").write_text(
        "from \"shop.svc\" import ship\n\n"
        "def test_ship():\n    assert_eq(ship(7), 7)\n")
    for env, expected in (({}, "INFO shipping order=7\n"),
                          ({"SVC_LOG_FORMAT": "json"}, None)):
        result = run_to_end(["test", str(tmp_path / "shop.svc")], env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "1 passed" in result.stdout
        if expected is not None:
            assert result.stderr == expected
        else:
            (line,) = json_lines(result.stderr)
            assert line["message"] == "shipping" and line["fields"] == {"order": "7"}


# --- metrics ----------------------------------------------------------------------------------------


def test_metrics_count_every_request_by_route_and_jobs_by_outcome(tmp_path):
    metrics_port = free_port()
    server = start_program(tmp_path, SVC_METRICS_PORT=str(metrics_port))
    try:
        for _ in range(5):
            assert server.request("GET", "/hello/ada").status == 200
        for n in range(3):
            assert server.request("GET", f"/ratio/{n}/0").status == 500
        assert server.request("GET", "/nowhere").status == 404
        assert server.request("DELETE", "/hello/ada").status == 405
        assert server.request("HEAD", "/hello/ada").status == 200
        for n in range(4):
            assert server.request("POST", f"/orders/{n}").status == 200
        assert server.request("POST", "/doomed/1").status == 200
        for n in range(2):
            assert server.request("POST", f"/pings/{n}").status == 204
        found = wait_until(lambda: (lambda f: f if f.get(
            ("svc_job_runs_total", (("job", "doomed"), ("outcome", "dead")))) and f.get(
            ("svc_job_runs_total", (("job", "ship"), ("outcome", "done")))) == 4 else None)(
            samples(metrics_port)))
        assert found, samples(metrics_port)
        assert requests_total(found, "/hello/{name}", "GET", "200") == 5
        assert requests_total(found, "/hello/{name}", "HEAD", "200") == 1
        assert requests_total(found, "/ratio/{a}/{b}", "GET", "500") == 3
        assert requests_total(found, "none", "GET", "404") == 1
        assert requests_total(found, "none", "DELETE", "405") == 1
        assert requests_total(found, "/orders/{id}", "POST", "200") == 4
        assert found[("svc_http_request_duration_seconds_count", (("route", "/hello/{name}"),))] \
            == 6
        assert found[("svc_http_request_duration_seconds_bucket",
                      (("le", "+Inf"), ("route", "/ratio/{a}/{b}")))] == 3
        assert found[("svc_http_requests_in_flight", ())] == 0
        assert found[("svc_jobs_enqueued_total", (("job", "ship"),))] == 4
        assert found[("svc_jobs_enqueued_total", (("job", "doomed"),))] == 1
        assert found[("svc_job_runs_total", (("job", "doomed"), ("outcome", "retry")))] == 1
        assert found[("svc_job_runs_total", (("job", "doomed"), ("outcome", "dead")))] == 1
        assert found[("svc_job_run_duration_seconds_count", (("job", "ship"),))] == 4
        database = str(tmp_path / "o.sqlite")
        assert found[("svc_db_queue_depth", (("database", database),))] == 0
        assert found[("svc_topic_messages_published_total", ())] == 2
        assert found[("svc_topic_bus_up", (("dialect", "sqlite"),))] == 1
        status, headers, text = scrape(metrics_port, "application/openmetrics-text")
        assert status == 200 and headers["content-type"].startswith("application/openmetrics")
        assert text.rstrip().endswith("# EOF")
    finally:
        assert server.stop() == 0


def test_the_metrics_endpoint_answers_only_get_of_metrics_on_loopback(tmp_path):
    metrics_port = free_port()
    server = start_program(tmp_path, SVC_METRICS_PORT=str(metrics_port))
    try:
        for method, path, status in (("GET", "/", 404), ("POST", "/metrics", 405),
                                     ("HEAD", "/metrics", 200), ("GET", "/metrics?x=1", 200)):
            conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
            conn.request(method, path)
            answer = conn.getresponse()
            answer.read()
            conn.close()
            assert answer.status == status, (method, path)
        with socket.create_connection(("127.0.0.1", metrics_port), timeout=10) as raw:
            raw.sendall(b"garbage\r\n\r\n")
            assert raw.recv(100).startswith(b"HTTP/1.1 400")
        listening = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
                     if line.split()[3] == "0A"]
        addresses = {fields[1] for fields in listening
                     if int(fields[1].split(":")[1], 16) == metrics_port}
        assert addresses == {f"0100007F:{metrics_port:04X}"}  # 127.0.0.1 only
        assert server.request("GET", "/metrics").status == 404  # not on the program's port
    finally:
        assert server.stop() == 0


def hold_and_crowd(server, hold_ms: int, callers: int, metrics_port: int,
                   holders: int = 1) -> dict:
    """`holders` requests hold the database for `hold_ms` (SQLite: its thread; PostgreSQL:
    a connection each) while `callers` more ask it something; returns a scrape taken
    meanwhile (every answer must be 200)."""
    in_flight = ("svc_http_requests_in_flight", ())
    with ThreadPoolExecutor(callers + holders) as pool:
        held = [pool.submit(server.request, "POST", f"/hold/{hold_ms}") for _ in range(holders)]
        # Polled, not slept for: on a busy machine the requests arrive late.
        while samples(metrics_port)[in_flight] < holders:
            time.sleep(0.01)
        time.sleep(0.05)  # from in flight to holding
        crowd = [pool.submit(server.request, "GET", "/one") for _ in range(callers)]
        # The scrape with the most requests in flight while the holders hold.
        meanwhile = samples(metrics_port)
        while not all(h.done() for h in held):
            scrape = samples(metrics_port)
            if scrape[in_flight] >= meanwhile[in_flight]:
                meanwhile = scrape
            time.sleep(0.02)
        assert [h.result().status for h in held] == [200] * holders
        assert [c.result().status for c in crowd] == [200] * callers
    return meanwhile


def test_sqlite_queue_depth_and_waits_for_room(tmp_path):
    metrics_port = free_port()
    server = start_program(tmp_path, SVC_METRICS_PORT=str(metrics_port))
    database = str(tmp_path / "o.sqlite")
    try:
        meanwhile = hold_and_crowd(server, 1000, 80, metrics_port)
        # 64 queued for the thread the transaction holds, the rest waiting for room
        assert meanwhile[("svc_db_queue_depth", (("database", database),))] > 64
        assert meanwhile[("svc_http_requests_in_flight", ())] > 64
        found = samples(metrics_port)
        waited = found[("svc_db_wait_seconds_count", (("database", database),))]
        assert 1 <= waited <= 80 - 64 + 1
        assert found[("svc_db_wait_seconds_sum", (("database", database),))] > 0
        assert found[("svc_db_queue_depth", (("database", database),))] == 0
        assert found[("svc_http_requests_in_flight", ())] == 0
        assert requests_total(found, "/one", "GET", "200") == 80
    finally:
        assert server.stop() == 0


def test_postgresql_pool_metrics_name_the_database_without_credentials(postgres_cluster,
                                                                       tmp_path):
    url = postgres_cluster.create_database()
    metrics_port = free_port()
    server = start([str(PROGRAM)], env={"SVC_DB": url, "SVC_METRICS_PORT": str(metrics_port),
                                        "SVC_DB_POOL_SIZE": "3"})
    label = "postgresql://" + url.split("@", 1)[1]
    try:
        meanwhile = hold_and_crowd(server, 800, 6, metrics_port, holders=3)
        assert meanwhile[("svc_db_pool_size", (("database", label),))] == 3
        assert meanwhile[("svc_db_pool_connections", (("database", label),))] == 3
        assert meanwhile[("svc_db_pool_connections_in_use", (("database", label),))] >= 1
        assert meanwhile[("svc_db_queue_depth", (("database", label),))] >= 1
        found = samples(metrics_port)
        assert found[("svc_db_wait_seconds_count", (("database", label),))] >= 1
        assert 0 <= found[("svc_db_pool_connections_in_use", (("database", label),))] <= 3
        assert not [key for key in found if any("@" in value for _, value in key[1])]
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_bad_metrics_ports_stop_the_program_at_start(tmp_path, workers):
    env = {"SVC_WORKERS": workers, "SVC_PORT": str(free_port()),
           "SVC_DB": str(tmp_path / "o.sqlite")}
    for value in ("http", "0", "70000", ""):
        result = run_to_end(["run", str(PROGRAM)], env={**env, "SVC_METRICS_PORT": value})
        assert result.returncode == 1
        assert result.stderr.splitlines()[-1] == \
            f"error: SVC_METRICS_PORT must be a port number from 1 to 65535 (got {value!r})"
        assert "Traceback" not in result.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_to_end(["run", str(PROGRAM)], env={**env, "SVC_METRICS_PORT": str(port)})
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == \
        f"error: SVC_METRICS_PORT: port {port} is already in use"
    assert "Traceback" not in result.stderr and "listening" not in result.stdout
    same = run_to_end(["run", str(PROGRAM)], env={**env, "SVC_METRICS_PORT": env["SVC_PORT"]})
    assert same.returncode == 1
    assert same.stderr.splitlines()[-1] == \
        f"error: SVC_METRICS_PORT must be another port than the program's own ({env['SVC_PORT']})"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers need fork")
def test_with_two_workers_one_endpoint_sums_them_and_keeps_a_dead_worker_s_counts(tmp_path):
    """Also: JSON logs with workers, the supervisor's line included, ids unique across them."""
    metrics_port = free_port()
    temporary = tmp_path / "tmp"  # where the supervisor makes its private folder
    temporary.mkdir()
    server = start_program(tmp_path, SVC_WORKERS="2", SVC_METRICS_PORT=str(metrics_port),
                           TMPDIR=str(temporary), SVC_LOG_FORMAT="json")
    try:
        sent = 60
        for _ in range(sent):  # a connection each: the kernel spreads them over the workers
            assert server.request("GET", "/hello/ada").status == 200
        assert wait_until(lambda: requests_total(samples(metrics_port), "/hello/{name}", "GET",
                                                 "200") == sent), samples(metrics_port)
        (folder,) = temporary.glob("svc-metrics-*")
        assert folder.stat().st_mode & 0o777 == 0o700
        files = sorted(p.name for p in folder.iterdir())
        assert len(files) == 2, files  # one file per worker, named by its pid
        # a worker killed outright: its counts stay in the sum, its replacement adds its own
        pids = [int(name.split(".")[0]) for name in files]
        os.kill(pids[0], signal.SIGKILL)
        server.log(until=f"worker {pids[0]} killed by signal 9")
        time.sleep(1.5)  # the replacement starts
        for _ in range(10):
            assert server.request("GET", "/hello/ada").status == 200
        assert wait_until(lambda: requests_total(samples(metrics_port), "/hello/{name}", "GET",
                                                 "200") == sent + 10), samples(metrics_port)
        found = samples(metrics_port)
        assert found[("svc_http_request_duration_seconds_count", (("route", "/hello/{name}"),))] \
            == sent + 10
        assert found[("svc_http_requests_in_flight", ())] == 0
    finally:
        assert server.stop() == 0
    assert not folder.exists()  # the private folder is removed
    lines = json_lines("".join(server.stderr))  # the supervisor's own line is JSON too
    assert f"worker {pids[0]} killed by signal 9; starting a new one" in \
        [o["message"] for o in lines if o["level"] == "error"]
    ids = [o["request_id"] for o in lines if o["message"] == "request"]
    assert len(ids) == len(set(ids)) == sent + 10  # unique across the workers
