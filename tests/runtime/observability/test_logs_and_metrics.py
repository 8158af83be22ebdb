"""Logs, request ids and metrics, in process: a real `Connection` on a real event loop with a
fake transport (as tests/runtime/http/test_connection.py), and the metrics' counting, merging and
exposition through the Prometheus client library's own parser.

The same behaviour over real sockets, through `svcc run`, with workers:
tests/e2e/test_logs_and_metrics.py.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from svc.rules.contract import Param, Route
from svc.rules.contract import ParamSource as S
from svc.rules.contract import ResultKind as R
from svc.runtime.http import builtin_routes
from svc.runtime.observability import metrics, serverlog
from svc.runtime.http.connection import App, Connection
from svc.runtime.http.custom_response import Response as SvcResponse
from svc.runtime.http.eager import running
from svc.runtime.http.protocol import HttpConnection, valid_request_id
from svc.runtime.http.routing import Router
from svc.runtime.observability.metrics_endpoint import registry_for
from svc.runtime.observability.serverlog import ServerLog, log_format_from_env, program_line
from svc.runtime.lib.support import SvcError
from svc.runtime import services
from svc.runtime.services import Services

# Its subject is the compiled request path: `make test` runs it again on the pure-Python modules.
pytestmark = pytest.mark.compiled_path

TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
GENERATED_ID = re.compile(r"^[0-9a-f]{12}-\d+$")

# --- the tiny application ---------------------------------------------------------------------


def hello():
    serverlog.log_info("saying hello", {"to": "world", "message": "a field, not the message"})
    return {"hello": "world"}


async def later(n):
    await asyncio.sleep(0)
    serverlog.log_warn("after an await", {"n": str(n)})
    await asyncio.sleep(0)
    return {"n": n}


def fails():
    raise ValueError("failed at once")


def database_error():  # as svc.runtime.db.errors.statement_failed makes one
    return SvcError("database", "no such table: t (in SQL: SELECT * FROM t)")


def custom():
    return SvcResponse(201, {"made": True}, [])


def own_id():
    return SvcResponse(200, {"own": True}, [("X-Request-Id", "the-handler-s")])


ROUTES = (
    *builtin_routes.ROUTES,
    Route("GET", "/hello", hello, (), R.JSON),
    Route("GET", "/later/{n}", later, (Param("n", S.PATH, "i64"),), R.JSON),
    Route("GET", "/fails", fails, (), R.JSON),
    Route("GET", "/database-error", database_error, (), R.JSON),
    Route("GET", "/custom", custom, (), R.RESPONSE_JSON),
    Route("GET", "/own-id", own_id, (), R.RESPONSE_JSON),
)


class Transport(asyncio.Transport):
    def __init__(self, protocol: Connection) -> None:
        super().__init__()
        self.protocol = protocol
        self.written = bytearray()
        self.closed = False

    def write(self, data) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 40404) if name == "peername" else default


class Served:
    """One connection to a server of ROUTES whose log (and metrics) the test reads."""

    def __init__(self, *, json_logs: bool, quiet: bool = False, counting: bool = False) -> None:
        self.stream = io.StringIO()
        self.log = ServerLog(quiet=quiet, stream=self.stream, json=json_logs)
        self.app = App(asyncio.get_running_loop(), Router(ROUTES), None, 10, self.log)
        self.counts = metrics.ProcessMetrics()
        self.counts.apps.append(self.app)
        if counting:
            self.log.set_metrics(self.counts.requests)
        services.use(Services(log=self.log))  # this scenario's task: its log_* lines go here

    async def ask(self, *requests: bytes) -> list[tuple[int, dict[str, str], bytes]]:
        """Each request on a connection of its own; the answers."""
        answers = []
        for data in requests:
            conn = Connection(self.app)
            transport = Transport(conn)
            conn.connection_made(transport)
            asyncio.get_running_loop().call_soon(conn.data_received, data)
            for _ in range(50):
                await asyncio.sleep(0)
                if b"\r\n\r\n" in transport.written:
                    break
            answers.append(_parse(bytes(transport.written)))
            conn.connection_lost(None)
        return answers

    def lines(self) -> list[str]:
        self.log.flush()
        return self.stream.getvalue().splitlines()

    def objects(self) -> list[dict]:
        return [json.loads(line) for line in self.lines()]


@pytest.fixture(autouse=True)
def no_log_left_active():
    yield
    assert running.request is None, "a handler's request was left as the running one"


def _parse(data: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        assert name.lower() not in headers or name.lower() != "x-request-id", "two ids"
        headers[name.lower()] = value.strip()
    return int(lines[0].split(" ")[1]), headers, body


def get(target: str, *headers: str) -> bytes:
    return ("\r\n".join([f"GET {target} HTTP/1.1", "Host: x", *headers]) + "\r\n\r\n").encode()


def run(scenario):
    return asyncio.run(scenario())


# --- SVC_LOG_FORMAT -------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [(None, "text"), ("text", "text"), ("json", "json"),
                                             (" JSON ", "json"), ("Text", "text")])
def test_the_log_format_is_text_unless_json_is_asked_for(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("SVC_LOG_FORMAT", raising=False)
    else:
        monkeypatch.setenv("SVC_LOG_FORMAT", value)
    assert log_format_from_env() == expected


@pytest.mark.parametrize("value", ["", "yaml", "jsonl", "json lines", "text,json"])
def test_any_other_log_format_is_an_error_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("SVC_LOG_FORMAT", value)
    problem = log_format_from_env()
    assert isinstance(problem, SvcError) and problem.kind == "invalid"
    assert problem.message == f"SVC_LOG_FORMAT must be 'text' or 'json' (got {value!r})"


# --- request ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value, kept", [
    (b"abc-123", "abc-123"), (b"x", "x"), (b"a" * 128, "a" * 128),
    (b"!~{}<>", "!~{}<>"),  # visible ASCII
    (b'say"hi', None), (b"back\\slash", None),  # but the two a JSON string must escape
    (b"", None), (b"a" * 129, None), (b"has space", None), (b"tab\there", None),
    (b"caf\xc3\xa9", None), (b"nul\x00", None), (b"del\x7f", None), (b"line\r\nX-Evil: 1", None),
])
def test_a_request_id_is_1_to_128_visible_ascii_characters(value, kept):
    assert valid_request_id(value) == kept


def test_the_parser_keeps_the_first_request_id_field_and_only_a_valid_one():
    conn = HttpConnection()
    (request,) = conn.feed(get("/", "x-request-id: one", "X-Request-Id: two"))
    assert request.rid == "one"
    (request,) = conn.feed(get("/", "X-REQUEST-ID: bad id", "X-Request-Id: two"))
    assert request.rid == ""  # the first field counts, and it was not valid
    (request,) = conn.feed(get("/"))
    assert request.rid == ""  # nothing carried over from the request before


def test_made_ids_are_unique_per_process_and_a_forked_child_gets_another_prefix():
    first, second = serverlog.new_request_id(), serverlog.new_request_id()
    assert GENERATED_ID.match(first) and first != second
    assert first.split("-")[0] == second.split("-")[0]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the prefix changed at the fork
        os.write(write_end, serverlog.new_request_id().encode())
        os._exit(0)
    os.close(write_end)
    child = os.read(read_end, 100).decode()
    os.close(read_end)
    os.waitpid(pid, 0)
    assert GENERATED_ID.match(child) and child.split("-")[0] != first.split("-")[0]


def test_with_text_logs_an_answer_has_no_id_unless_the_request_brought_one():
    async def scenario():
        served = Served(json_logs=False)
        (plain, brought, invalid, health) = await served.ask(
            get("/custom"), get("/custom", "X-Request-Id: from-the-proxy"),
            get("/custom", "X-Request-Id: not valid"), get("/health", "X-Request-Id: hc-1"))
        assert "x-request-id" not in plain[1]
        assert brought[1]["x-request-id"] == "from-the-proxy"
        assert "x-request-id" not in invalid[1]  # dropped, never echoed
        assert health[1]["x-request-id"] == "hc-1" and health[2] == b"ok"
        assert served.lines() == [
            f"GET /custom 201 {served.lines()[0].split()[3]}",
            f"GET /custom 201 {served.lines()[1].split()[3]} request_id=from-the-proxy",
            f"GET /custom 201 {served.lines()[2].split()[3]}",
            f"GET /health 200 {served.lines()[3].split()[3]} request_id=hc-1",
        ]
    run(scenario)


def test_with_text_logs_an_error_makes_an_id_for_its_lines_and_its_answer():
    async def scenario():
        served = Served(json_logs=False)
        (fault, database) = await served.ask(get("/fails"), get("/database-error"))
        assert fault[0] == 500 and GENERATED_ID.match(fault[1]["x-request-id"])
        assert database[0] == 500 and GENERATED_ID.match(database[1]["x-request-id"])
        text = "\n".join(served.lines())
        fault_id, database_id = fault[1]["x-request-id"], database[1]["x-request-id"]
        assert f"GET /fails: internal error request_id={fault_id}\nTraceback" in text
        assert "ValueError: failed at once" in text
        assert re.search(rf"^GET /fails 500 \d+\.\dms request_id={fault_id}$", text, re.M)
        assert (f"GET /database-error: database error: no such table: t (in SQL: SELECT * FROM "
                f"t) request_id={database_id}") in text
        assert re.search(rf"^GET /database-error 500 \d+\.\dms request_id={database_id}$",
                         text, re.M)
    run(scenario)


def test_with_json_logs_every_answer_carries_the_id_of_its_log_line():
    async def scenario():
        served = Served(json_logs=True)
        answers = await served.ask(
            get("/hello?x=1&y=%20"), get("/later/7", "X-Request-Id: abc-123"),
            get("/nowhere", "X-Request-Id: " + "b" * 129), get("/health"), get("/custom"),
            get("/fails"), b"DELETE /hello HTTP/1.1\r\nHost: x\r\n\r\n",
            b"POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
        statuses = [status for status, _headers, _body in answers]
        assert statuses == [200, 200, 404, 200, 201, 500, 405, 413]
        ids = [headers["x-request-id"] for _status, headers, _body in answers]
        assert ids[1] == "abc-123"
        assert all(GENERATED_ID.match(rid) for i, rid in enumerate(ids) if i != 1)
        assert len(set(ids)) == len(ids)
        objects = served.objects()
        access = [o for o in objects if o["message"] == "request"]
        assert [o["request_id"] for o in access] == ids
        first = access[0]
        assert TIME.match(first["time"])
        assert first == {"time": first["time"], "level": "info", "message": "request",
                         "request_id": ids[0], "method": "GET", "path": "/hello",
                         "query": "x=1&y=%20", "status": 200,
                         "duration_ms": first["duration_ms"], "client": "127.0.0.1:40404",
                         "route": "/hello"}
        assert isinstance(first["duration_ms"], float) and first["duration_ms"] >= 0
        assert access[1]["route"] == "/later/{n}" and "query" not in access[1]
        assert [o["route"] for o in access[2:]] == [None, "/health", "/custom", "/fails", None,
                                                     None]
        assert access[7]["status"] == 413 and access[7]["method"] == "POST"
        error = next(o for o in objects if o["level"] == "error")
        assert error["request_id"] == ids[5] and error["message"] == "internal error"
        assert error["route"] == "/fails" and error["path"] == "/fails"
        assert error["fault"] == "internal fault: ValueError: failed at once"
        assert "ValueError: failed at once" in error["trace"]
    run(scenario)


def test_a_handler_that_sets_its_own_request_id_field_keeps_it():
    async def scenario():
        served = Served(json_logs=True)
        ((status, headers, _body),) = await served.ask(get("/own-id"))
        assert status == 200 and headers["x-request-id"] == "the-handler-s"
    run(scenario)


def test_quiet_logs_keep_error_details_and_ids():
    async def scenario():
        served = Served(json_logs=True, quiet=True)
        (hello, fault) = await served.ask(get("/hello"), get("/fails"))
        objects = served.objects()
        assert [o["message"] for o in objects] == ["saying hello", "internal error"]
        assert objects[1]["request_id"] == fault[1]["x-request-id"]
        assert GENERATED_ID.match(hello[1]["x-request-id"])  # the answer still carries one
    run(scenario)


# --- log_info, log_warn, log_error ---------------------------------------------------------------


def test_log_lines_in_a_handler_carry_its_request_id_before_and_after_an_await():
    async def scenario():
        served = Served(json_logs=True)
        (hello, later) = await served.ask(get("/hello"), get("/later/5", "X-Request-Id: r-5"))
        objects = served.objects()
        said = objects[0]
        assert TIME.match(said["time"])
        assert said == {"time": said["time"], "level": "info", "message": "saying hello",
                        "request_id": hello[1]["x-request-id"],
                        "fields": {"to": "world", "message": "a field, not the message"}}
        warned = next(o for o in objects if o["level"] == "warn")
        assert warned["request_id"] == "r-5" and warned["fields"] == {"n": "5"}
        assert warned["message"] == "after an await"
        serverlog.log_error("outside any request", {})
        assert served.objects()[-1] == {"time": served.objects()[-1]["time"], "level": "error",
                                        "message": "outside any request", "fields": {}}
    run(scenario)


def test_log_lines_in_a_handler_in_text_make_the_id_its_answer_carries():
    async def scenario():
        served = Served(json_logs=False, quiet=True)
        ((_status, headers, _body),) = await served.ask(get("/hello"))
        rid = headers["x-request-id"]
        assert served.lines() == [
            f'INFO saying hello to=world message="a field, not the message" request_id={rid}']
    run(scenario)


def test_a_text_line_stays_one_line_whatever_the_message_and_fields_hold():
    line = program_line(False, "warn", "two\nlines", {"a key": "x=y", "": "", "q": 'say "hi"',
                                                      "ok": "plain", "nl": "a\r\nb"}, "")
    assert line == ('WARN "two\\nlines" "a key"="x=y" ""="" q="say \\"hi\\"" ok=plain '
                    'nl="a\\r\\nb"\n')
    assert line.count("\n") == 1


def test_a_json_line_keeps_the_fields_apart_from_its_own_keys():
    line = program_line(True, "info", "m", {"level": "fake", "time": "0", "request_id": "x",
                                            "message": "n", "nul": "\x00", "é": "ü"}, "rid-1")
    decoded = json.loads(line)
    assert decoded["level"] == "info" and decoded["message"] == "m"
    assert decoded["request_id"] == "rid-1" and TIME.match(decoded["time"])
    assert decoded["fields"] == {"level": "fake", "time": "0", "request_id": "x",
                                 "message": "n", "nul": "\x00", "é": "ü"}
    assert line.count("\n") == 1 and line.endswith("}\n")


def test_outside_a_server_log_lines_go_to_stderr_at_once(capsys, monkeypatch):
    monkeypatch.setenv("SVC_LOG_FORMAT", "json")
    serverlog.log_info("at start", {"k": "v"})
    decoded = json.loads(capsys.readouterr().err)
    assert decoded["message"] == "at start" and "request_id" not in decoded
    monkeypatch.setenv("SVC_LOG_FORMAT", "nonsense")  # serve refuses it; a log line cannot
    serverlog.log_warn("still written", {})
    assert capsys.readouterr().err == "WARN still written\n"


def test_error_details_not_about_a_request_in_json():
    stream = io.StringIO()
    log = ServerLog(stream=stream, json=True)
    log.error("jobs: job mail #1 failed\n")
    log.flush()
    decoded = json.loads(stream.getvalue())
    assert decoded == {"time": decoded["time"], "level": "error",
                       "message": "jobs: job mail #1 failed"}


# --- metrics -----------------------------------------------------------------------------------------


def scrape(source) -> dict:
    """The exposition of the collector over `source`, parsed by the client library:
    {(name, labels as a sorted tuple): value}."""
    text = generate_latest(registry_for(source)).decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_requests_are_counted_by_route_method_and_status():
    async def scenario():
        served = Served(json_logs=False, quiet=True, counting=True)
        counts = served.counts
        await served.ask(get("/hello"), get("/hello"), b"HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n",
                         get("/later/1"), get("/later/2"), get("/nowhere"), get("/fails"),
                         b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n",
                         b"DELETE /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        found = scrape(lambda: metrics.merge([counts.snapshot()]))
        requests = {labels: value for (name, labels), value in found.items()
                    if name == "svc_http_requests_total"}
        assert requests == {
            (("method", "GET"), ("route", "/hello"), ("status", "200")): 2,
            (("method", "HEAD"), ("route", "/hello"), ("status", "200")): 1,
            (("method", "GET"), ("route", "/later/{n}"), ("status", "200")): 2,
            (("method", "GET"), ("route", "none"), ("status", "404")): 1,
            (("method", "GET"), ("route", "/fails"), ("status", "500")): 1,
            (("method", "other"), ("route", "none"), ("status", "400")): 1,
            (("method", "DELETE"), ("route", "none"), ("status", "405")): 1,
        }
        assert found[("svc_http_request_duration_seconds_count", (("route", "/hello"),))] == 3
        assert found[("svc_http_request_duration_seconds_bucket",
                      (("le", "+Inf"), ("route", "/later/{n}")))] == 2
        assert found[("svc_http_requests_in_flight", ())] == 0
    run(scenario)


def test_histogram_buckets_are_cumulative_and_in_flight_is_read_at_the_scrape():
    counts = metrics.ProcessMetrics()
    for seconds in (0.0001, 0.0005, 0.003, 0.2, 5.0):
        counts.requests.observe(None, "GET", 404, seconds)

    class FakeApp:
        in_flight = 3

    counts.apps.append(FakeApp())  # type: ignore[arg-type]
    found = scrape(lambda: metrics.merge([counts.snapshot()]))

    def bucket(le: str) -> float:
        return found[("svc_http_request_duration_seconds_bucket", (("le", le), ("route", "none")))]

    assert [bucket(le) for le in ("0.0005", "0.001", "0.005", "0.25", "2.5", "+Inf")] == \
        [2, 2, 3, 4, 4, 5]
    assert found[("svc_http_request_duration_seconds_sum", (("route", "none"),))] == \
        pytest.approx(5.2036)
    assert found[("svc_http_requests_in_flight", ())] == 3


def test_merging_workers_sums_counters_and_histograms_and_only_live_gauges():
    def worker(requests: int, in_flight: int) -> dict:
        counts = metrics.ProcessMetrics()
        for _ in range(requests):
            counts.requests.observe(None, "GET", 404, 0.001)
        counts.job_runs[("mail", "done")] = requests

        class FakeApp:
            pass

        app = FakeApp()
        app.in_flight = in_flight  # type: ignore[attr-defined]
        counts.apps.append(app)  # type: ignore[arg-type]
        return counts.snapshot()

    merged = metrics.merge([worker(3, 1), worker(4, 2)], [worker(5, 7)])
    found = scrape(lambda: merged)
    assert found[("svc_http_requests_total",
                  (("method", "GET"), ("route", "none"), ("status", "404")))] == 12
    assert found[("svc_http_request_duration_seconds_count", (("route", "none"),))] == 12
    assert found[("svc_job_runs_total", (("job", "mail"), ("outcome", "done")))] == 12
    assert found[("svc_http_requests_in_flight", ())] == 3  # the dead worker's 7 is gone
    assert json.loads(json.dumps(merged)) == merged  # plain data, as the files hold it


def test_jobs_and_database_waits_are_counted_only_while_metrics_are_on():
    program = Services()
    with services.running(program):
        metrics.job_enqueued("mail")
        metrics.db_waited("x.sqlite", 0.5)  # off: nothing to count into, nothing raised
        counts = program.metrics = metrics.ProcessMetrics()
        metrics.job_enqueued("mail")
        metrics.job_enqueued("mail")
        metrics.job_ran("mail", "retry", 0.02)
        metrics.job_ran("mail", "dead", 0.03)
        metrics.db_waited("x.sqlite", 0.002)
        found = scrape(lambda: metrics.merge([counts.snapshot()]))
    assert found[("svc_jobs_enqueued_total", (("job", "mail"),))] == 2
    assert found[("svc_job_runs_total", (("job", "mail"), ("outcome", "retry")))] == 1
    assert found[("svc_job_runs_total", (("job", "mail"), ("outcome", "dead")))] == 1
    assert found[("svc_job_run_duration_seconds_count", (("job", "mail"),))] == 2
    assert found[("svc_db_wait_seconds_bucket", (("database", "x.sqlite"), ("le", "0.005")))] == 1


@pytest.mark.parametrize("url, label", [
    ("postgresql://ada:secret@db.example:5432/app?sslmode=require&password=x",
     "postgresql://db.example:5432/app"),
    ("postgres://db/app", "postgres://db/app"),
    ("postgresql://u:p@ss@host/db", "postgresql://host/db"),
])
def test_a_postgresql_database_label_has_no_credentials(url, label):
    assert metrics.database_label(url) == label


@pytest.mark.parametrize("value", ["", "0", "65536", "-1", "80a", "８０", "9090 9091"])
def test_a_bad_metrics_port_is_an_error_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("SVC_METRICS_PORT", value)
    problem = metrics.port_from_env()
    assert isinstance(problem, SvcError)
    assert problem.message == (f"SVC_METRICS_PORT must be a port number from 1 to 65535 "
                               f"(got {value!r})")


def test_the_metrics_port_is_off_when_unset(monkeypatch):
    monkeypatch.delenv("SVC_METRICS_PORT", raising=False)
    assert metrics.port_from_env() is None
    monkeypatch.setenv("SVC_METRICS_PORT", " 9464 ")
    assert metrics.port_from_env() == 9464


def test_a_log_made_without_a_format_takes_it_and_the_counting_from_the_environment(
        monkeypatch):
    """As bench/instructions.py makes its log: `ServerLog(quiet=...)`."""
    monkeypatch.delenv("SVC_LOG_FORMAT", raising=False)
    monkeypatch.delenv("SVC_METRICS_PORT", raising=False)
    plain = ServerLog(quiet=True)
    assert (plain.json, plain.metrics, plain.on) == (False, None, False)
    monkeypatch.setenv("SVC_LOG_FORMAT", "JSON")
    monkeypatch.setenv("SVC_METRICS_PORT", "9464")
    both = ServerLog(quiet=True)
    assert both.json and both.metrics is not None and both.on
    said = ServerLog(quiet=True, json=False)  # the server says: nothing from the environment
    assert (said.json, said.metrics, said.on) == (False, None, False)


def test_the_bucket_count_is_the_number_of_bounds():
    from svc.runtime.observability import accesslog

    assert accesslog.BUCKET_COUNT == len(accesslog.DURATION_BUCKETS)
    assert list(accesslog.DURATION_BUCKETS) == sorted(accesslog.DURATION_BUCKETS)
    assert accesslog.FIRST_BOUND == accesslog.DURATION_BUCKETS[0]


def test_counts_kept_in_runs_match_every_request_counted_one_by_one():
    """RouteCounts keeps requests like the one before in a run and short durations apart;
    whatever the order, and however often it is read in between, the scrape shows each
    request once."""
    import random
    from collections import Counter

    from svc.runtime.observability import accesslog

    chooser = random.Random(26)
    counts = accesslog.RequestCounts()
    expected: Counter = Counter()
    buckets: Counter = Counter()
    expected_total = 0.0
    for step in range(3000):
        method = chooser.choice(["GET", "GET", "GET", "HEAD", "POST"])
        status = chooser.choice([200, 200, 200, 404, 503])
        seconds = chooser.choice([0.0001, 0.0005, 0.0007, 0.02, 3.0])
        counts.observe(None, method, status, seconds)
        expected[(method, status)] += 1
        expected_total += seconds
        buckets[next((i for i, bound in enumerate(accesslog.DURATION_BUCKETS) if seconds <= bound),
                     len(accesslog.DURATION_BUCKETS))] += 1
        if step % 700 == 0:  # a scrape in the middle of a run
            counts.routes[None].statuses_counted()
    (route_counts,) = counts.routes.values()
    assert Counter({(m, s): c for m, s, c in route_counts.statuses_counted()}) == expected
    histogram, total = route_counts.histogram()
    assert histogram == [buckets[i] for i in range(len(histogram))] and sum(histogram) == 3000
    assert total == pytest.approx(expected_total)


def test_made_ids_count_on_across_every_thousand():
    from svc.runtime.observability import accesslog

    ids = accesslog.Ids()
    made = [ids.next() for _ in range(2500)]
    assert made == [f"{ids.prefix}{n}" for n in range(1, 2501)]


def test_json_lines_on_one_connection_reuse_their_parts_and_stay_exact():
    """The access line of each request, whether its method, target, status or route is the
    one before's or not, is the JSON object of its own fields, keys in order."""
    from svc.runtime.observability import accesslog

    class Pattern:
        def __init__(self, path: str) -> None:
            self.path = path

    class Compiled:
        def __init__(self, path: str) -> None:
            self.route = Pattern(path)

    users, tasks = Compiled("/users/{id}"), Compiled('/odd/"{x}"\\')
    parts = accesslog.LineParts(',"client":"127.0.0.1:5000"')
    cases = [  # method, target, status, route, elapsed seconds
        ("GET", b"/users/1", 200, users, 0.0002),
        ("GET", b"/users/1", 200, users, 0.0002),
        ("GET", b"/users/2", 200, users, 0.0015),
        ("HEAD", b"/users/2", 200, users, 0.25),
        ("GET", b"/users/2", 404, users, 2.5),
        ("GET", b'/odd/"a"\\?q="b"\\&x=1', 201, tasks, 1234.5678),
        ("GET", b"/nowhere?", 404, None, 0.0),
        ("GET", b"/users/3", 200, users, 0.0009996),
    ]
    for method, target, status, route, elapsed in cases:
        lines: list[str] = []
        rid = accesslog.new_request_id()
        accesslog.access_json(lines, method, target, status, 100.0, elapsed, route, rid, parts)
        line = "".join(lines)
        assert line.endswith("}\n") and line.count("\n") == 1
        found = json.loads(line)
        path, _, query = target.decode().partition("?")
        expected = {"time": found["time"], "level": "info", "message": "request",
                    "request_id": rid, "method": method, "path": path,
                    **({"query": query} if query else {}), "status": status,
                    "duration_ms": round(elapsed * 1000, 3), "client": "127.0.0.1:5000",
                    "route": None if route is None else route.route.path}
        assert list(found.items()) == list(expected.items())
        assert TIME.match(found["time"])
