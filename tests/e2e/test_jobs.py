"""Durable jobs and schedules, end to end: `svcc run tests/e2e/programs/jobs.svc` on an SQLite
file and on a PostgreSQL database, driven over HTTP, its tables read from outside.

Each test waits for the effect it expects (bounded), then checks the job rows: their state, their
attempt count, their recorded error, and the program's own tables (runs counts every run, shipped
holds one row per order whatever the runs).
"""

from __future__ import annotations

import json
import signal
import socket
import time

import pytest

from tests.helpers.jobs_db import query, wait_for
from tests.helpers.svc_process import REPO, start

PROGRAM = REPO / "tests" / "e2e" / "programs" / "jobs.svc"


def start_jobs(url: str, **env: str):
    return start([str(PROGRAM)], env={"SVC_DB": url, **env})


def count(url: str, sql: str) -> int:
    return query(url, sql)[0][0]


def job_rows(url: str, name: str) -> list[tuple]:
    return query(url, "SELECT state, attempt, last_error FROM svc_jobs WHERE name = "
                      f"'{name}' ORDER BY id")


def test_an_order_and_its_job_commit_together_and_the_job_runs_once(database_url):
    server = start_jobs(database_url)
    try:
        ids = [server.request("POST", f"/orders/{n}").json() for n in range(1, 6)]
        assert ids == sorted(set(ids)) and len(ids) == 5, ids
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM shipped") == 5)
        wait_for(lambda: [r[0] for r in job_rows(database_url, "ship")] == ["done"] * 5)
        assert count(database_url, "SELECT COUNT(*) FROM runs") == 5
        assert [r[1] for r in job_rows(database_url, "ship")] == [1] * 5
    finally:
        assert server.stop() == 0


def test_a_rolled_back_enqueue_leaves_neither_the_data_nor_the_job(database_url):
    server = start_jobs(database_url)
    try:
        answer = server.request("POST", "/orders/9/abandoned")
        assert answer.status == 200, answer.body
        server.request("POST", "/orders/10")  # a later job that does run
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM shipped") == 1)
        assert query(database_url, "SELECT order_id FROM shipped") == [(10,)]
        assert count(database_url, "SELECT COUNT(*) FROM orders") == 1
        assert count(database_url, "SELECT COUNT(*) FROM svc_jobs") == 1
    finally:
        assert server.stop() == 0


def test_a_failing_job_is_retried_with_backoff_until_it_succeeds(database_url):
    server = start_jobs(database_url)
    try:
        server.request("POST", "/flaky/one")
        wait_for(lambda: job_rows(database_url, "flaky")[0][0] == "done")
        state, attempt, error = job_rows(database_url, "flaky")[0]
        assert attempt == 3 and error == "invalid: not yet: try 2"
        assert count(database_url, "SELECT COUNT(*) FROM tries") == 3
        log = server.log("attempt 2 of 5 failed")
        assert "jobs: job flaky #1 attempt 1 of 5 failed" in log and "retrying in" in log
    finally:
        assert server.stop() == 0


def test_a_job_that_always_fails_ends_dead_with_its_last_error(database_url):
    server = start_jobs(database_url)
    try:
        server.request("POST", "/doomed/ann")
        wait_for(lambda: job_rows(database_url, "doomed")[0][0] == "dead")
        assert job_rows(database_url, "doomed") == [
            ("dead", 2, "invalid: this job always fails: ann")]
        assert "no attempts left, it is dead" in server.log("it is dead")
    finally:
        assert server.stop() == 0


def test_a_fault_in_a_job_is_logged_with_its_line_and_is_a_failed_attempt(database_url):
    server = start_jobs(database_url)
    try:
        server.request("POST", "/faulty")
        wait_for(lambda: job_rows(database_url, "faulty")[0][0] == "dead")
        state, attempt, error = job_rows(database_url, "faulty")[0]
        assert attempt == 2
        assert error.startswith("fault: ") and "jobs.svc:" in error, error
        assert "Traceback" not in server.log()
        assert server.request("GET", "/health").status == 200
    finally:
        assert server.stop() == 0


def test_a_run_past_its_deadline_is_cancelled_and_changes_nothing(database_url):
    server = start_jobs(database_url)
    try:
        server.request("POST", "/sluggish/77")
        wait_for(lambda: job_rows(database_url, "sluggish")[0][0] == "dead")
        assert job_rows(database_url, "sluggish") == [
            ("dead", 1, "it passed its deadline of 0.2s")]
        time.sleep(2.2)  # the cancelled sleep would have ended by now
        assert count(database_url, "SELECT COUNT(*) FROM shipped") == 0
    finally:
        assert server.stop() == 0


def test_a_job_may_enqueue_jobs(database_url):
    server = start_jobs(database_url)
    try:
        server.request("POST", "/fanout/1000/100")
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM shipped") == 100)
        assert count(database_url, "SELECT MIN(order_id) FROM shipped") == 1000
        assert count(database_url, "SELECT COUNT(*) FROM runs") == 100
        # the fan-out job is marked done after its run returns: its children may finish first
        wait_for(lambda: count(database_url,
                               "SELECT COUNT(*) FROM svc_jobs WHERE state = 'done'") == 101)
        assert count(database_url, "SELECT COUNT(*) FROM svc_jobs") == 101
    finally:
        assert server.stop() == 0


def test_a_graceful_stop_finishes_running_jobs_and_leaves_the_rest_queued(database_url):
    server = start_jobs(database_url)
    try:
        assert server.request("POST", "/bulk/1/60/400").json() == 60
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM runs") >= 1)
    finally:
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    states = dict(query(database_url, "SELECT state, COUNT(*) FROM svc_jobs GROUP BY state"))
    assert set(states) <= {"done", "queued"} and states.get("queued", 0) > 0, states
    # Every run that began was let finish: nothing was cut off halfway.
    assert count(database_url, "SELECT COUNT(*) FROM runs") == states.get("done", 0)
    assert count(database_url, "SELECT MAX(attempt) FROM svc_jobs WHERE state = 'queued'") == 0
    again = start_jobs(database_url)
    try:
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM shipped") == 60, timeout=30)
        assert count(database_url, "SELECT COUNT(*) FROM runs") == 60  # each ran exactly once
    finally:
        assert again.stop() == 0


def test_a_schedule_runs_once_a_period_without_overlapping_and_is_logged(database_url):
    server = start_jobs(database_url)
    try:
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM ticks") >= 3, timeout=10)
        assert "schedule tick ran in" in server.log("schedule tick ran in")
    finally:
        assert server.stop() == 0
    ticks = query(database_url, "SELECT started, ended, due FROM ticks ORDER BY started")
    for (started, ended, due), (next_started, _, next_due) in zip(ticks, ticks[1:]):
        assert next_started >= ended, ticks  # never overlapping
        # once a period (1 s), not more often: each run is taken when the last one's due time
        # has come, and sets the next a period later (the scheduler's own clock, so a run that
        # starts late on a loaded machine does not make the next look early)
        assert next_due - due >= 1000, ticks


def test_a_schedule_run_is_an_info_line_in_json_logs(tmp_path):
    """A routine run must not look like an error to a log collector."""
    url = str(tmp_path / "json.sqlite")
    server = start_jobs(url, SVC_LOG_FORMAT="json")
    try:
        wait_for(lambda: count(url, "SELECT COUNT(*) FROM ticks") >= 1, timeout=10)
        text = server.log('"schedule tick ran in')
    finally:
        assert server.stop() == 0
    runs = [json.loads(line) for line in text.splitlines()
            if line.startswith("{") and "schedule tick ran in" in line]
    assert runs and all(run["level"] == "info" for run in runs), text


def test_enqueue_before_serving_makes_the_tables_and_the_jobs_wait_for_the_server(tmp_path):
    """A program may enqueue in main, before serve: the tables are made then."""
    url = str(tmp_path / "early.sqlite")
    program = tmp_path / "early.svc"
    program.write_text(PROGRAM.read_text().replace(
        '    port = try parse_i64(env("SVC_PORT", "8093"))',
        '    try await enqueue(db, "ship", Order(id=5, work_ms=0))\n'
        '    port = try parse_i64(env("SVC_PORT", "8093"))'))
    server = start([str(program)], env={"SVC_DB": url})
    try:
        wait_for(lambda: count(url, "SELECT COUNT(*) FROM shipped") == 1)
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("value", ["0", "x", "1001", ""])
def test_a_bad_job_concurrency_is_refused_at_start(tmp_path, value):
    from tests.helpers.svc_process import run_to_end

    done = run_to_end(["run", str(PROGRAM)], env={"SVC_DB": str(tmp_path / "c.sqlite"),
                                                  "SVC_JOB_CONCURRENCY": value, "SVC_PORT": "0"},
                      timeout=30)
    assert done.returncode != 0
    assert "SVC_JOB_CONCURRENCY must be an integer from 1 to 1000" in done.stderr
    assert "Traceback" not in done.stderr


def test_svcc_test_runs_jobs_with_run_jobs():
    """tests/e2e/programs/jobs_test.svc: handler tests enqueue, run the due jobs with run_jobs,
    and check the effect, the backoff and the dead letter; run_jobs_now runs a retry without
    waiting for its backoff (an hour)."""
    from tests.helpers.svc_process import run_to_end

    done = run_to_end(["test", str(PROGRAM)], timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed, 0 failed" in done.stdout
    assert "no attempts left, it is dead" in done.stdout + done.stderr


def test_a_retry_runs_when_it_is_due_not_at_the_next_poll(database_url, tmp_path):
    """The runner that recorded a failure looks again when the retry is due (issue 35: a
    retry "in 0.233s" ran 0.4 s later). With svc.toml's poll interval at 60 s, the two retries
    of "flaky" (backoff 50 ms, then 100 ms) could only run so soon if the runner wakes for them."""
    (tmp_path / "jobs.svc").write_text(PROGRAM.read_text())
    (tmp_path / "svc.toml").write_text('entry = "jobs.svc"\n\n[jobs]\npoll_seconds = 60\n')
    server = start(["--project", str(tmp_path)], env={"SVC_DB": database_url})
    try:
        started = time.monotonic()
        server.request("POST", "/flaky/due")
        wait_for(lambda: job_rows(database_url, "flaky")[0][0] == "done", timeout=30)
        assert time.monotonic() - started < 20  # a poll would have come after 60 s
        assert job_rows(database_url, "flaky")[0][1] == 3
    finally:
        assert server.stop() == 0


def test_a_failed_jobs_last_error_is_the_cause_not_the_clients_text(database_url):
    """Issue 35: a job whose outbound call fails records why (the refusal, as the log says
    it), not the text a client of a 502 would see ("the upstream service failed")."""
    with socket.socket() as probe:  # a port of 127.0.0.1 that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = start_jobs(database_url)
    try:
        server.request("POST", f"/notify/{port}")
        wait_for(lambda: [r[0] for r in job_rows(database_url, "notify")] == ["dead"])
        [(_, _, error)] = job_rows(database_url, "notify")
        assert error.startswith(f"outbound GET http://127.0.0.1:{port}/hook: cannot connect"), error
        assert "upstream service failed" not in error
        log = server.log(until="no attempts left")
        assert error in log  # the log line and the row say the same
    finally:
        assert server.stop() == 0
