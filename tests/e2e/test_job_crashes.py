"""Jobs across crashes and across processes: `kill -9` in the middle of 1,000 jobs, then a
restart; and several processes (SVC_WORKERS=2, two instances on one PostgreSQL) sharing one
queue and one schedule.

The program (tests/e2e/programs/jobs.svc) records every run of "ship" in `runs` and its effect,
idempotently, in `shipped`: so "done exactly once by its effect" is one shipped row per order,
"at least once" is a run per order, and "never twice while its runner is alive" is exactly one
run per order when nothing crashed.
"""

from __future__ import annotations

import signal
import time

from tests.helpers.jobs_db import query, wait_for
from tests.helpers.svc_process import REPO, start

PROGRAM = REPO / "tests" / "e2e" / "programs" / "jobs.svc"
JOBS = 1000
#: svc.toml's `[jobs] lease_grace_seconds` for the crash test: a killed runner's claims are
#: taken back this long after their deadline, instead of the default 5 s.
LEASE_GRACE = 0.5
#: How far the run is: orders shipped, and claims held now.
MIDWAY = ("SELECT (SELECT COUNT(*) FROM shipped), "
          "(SELECT COUNT(*) FROM svc_jobs WHERE state = 'running')")


def project(tmp_path, lease_grace: float) -> list[str]:
    """The jobs program as a project whose svc.toml sets the lease grace."""
    (tmp_path / "jobs.svc").write_text(PROGRAM.read_text())
    (tmp_path / "svc.toml").write_text(
        f'entry = "jobs.svc"\n\n[jobs]\nlease_grace_seconds = {lease_grace}\n')
    return ["--project", str(tmp_path)]


def count(url: str, sql: str) -> int:
    return query(url, sql)[0][0]


def midway(url: str) -> bool:
    """At least 150 orders shipped, and claims held now."""
    shipped, running = query(url, MIDWAY)[0]
    return shipped >= 150 and running > 0


def enqueue(server, first: int, jobs: int, work_ms: int) -> None:
    """POST /bulk: `jobs` orders in one transaction. A 503 (a PostgreSQL connection not made
    within its 2 s on a busy machine) rolled all of them back, so it is asked again after its
    Retry-After, as a client would: these tests are about claiming, not connecting."""
    for _ in range(10):
        answer = server.request("POST", f"/bulk/{first}/{jobs}/{work_ms}")
        if answer.status != 503:
            break
        time.sleep(float(answer.headers.get("retry-after", "1")))
    assert answer.json() == jobs


def kill_while_it_claims(program: list[str], url: str, first_start) -> None:
    """Kill -9 the server while it holds claims. Claims are held most of the time, but a kill
    can land between two batches (every run finished, the next claim not yet committed) and
    leave nothing to take back; then the server is started again and killed again, as an
    operator's second crash would be."""
    server = first_start
    for _ in range(5):
        try:
            wait_for(lambda: midway(url), timeout=60)
        finally:
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(timeout=10)
        if count(url, "SELECT COUNT(*) FROM svc_jobs WHERE state = 'running'") > 0:
            return
        server = start(program, env={"SVC_DB": url})
    raise AssertionError("five kills in a row landed between two batches")


def test_jobs_survive_kill_9_and_each_is_done_once_after_the_restart(database_url, tmp_path):
    program = project(tmp_path, LEASE_GRACE)
    server = start(program, env={"SVC_DB": database_url})
    try:
        enqueue(server, 1, JOBS, 20)
    except BaseException:
        server.process.kill()
        raise
    kill_while_it_claims(program, database_url, server)
    shipped_at_kill = count(database_url, "SELECT COUNT(*) FROM shipped")
    assert shipped_at_kill < JOBS, "the kill came too late to cut the run short"
    states = dict(query(database_url, "SELECT state, COUNT(*) FROM svc_jobs GROUP BY state"))
    assert states.get("running", 0) > 0, states  # the killed runner's claims are left behind
    assert sum(states.values()) == JOBS

    again = start(program, env={"SVC_DB": database_url})
    try:
        # The orphaned claims are taken back once their lease (deadline 3 s + the grace) passed.
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM svc_jobs WHERE state = 'done'")
                 == JOBS, timeout=90)
        assert "put back in the queue" in again.log("put back in the queue")
    finally:
        assert again.stop() == 0
    # Exactly once by its effect, none lost: one shipped row per order.
    assert count(database_url, "SELECT COUNT(*) FROM shipped") == JOBS
    assert count(database_url, "SELECT COUNT(DISTINCT order_id) FROM shipped") == JOBS
    # At least once: every order ran; only the runs cut off by the kill ran twice.
    runs = count(database_url, "SELECT COUNT(*) FROM runs")
    assert count(database_url, "SELECT COUNT(DISTINCT order_id) FROM runs") == JOBS
    assert JOBS <= runs <= JOBS + 10, runs  # at most SVC_JOB_CONCURRENCY runs were cut off


def test_two_workers_share_the_queue_and_run_each_job_once(database_url):
    server = start([str(PROGRAM)], env={"SVC_DB": database_url, "SVC_WORKERS": "2"})
    try:
        enqueue(server, 1, JOBS, 0)
        wait_for(lambda: count(database_url, "SELECT COUNT(*) FROM svc_jobs WHERE state = 'done'")
                 == JOBS, timeout=60)
    finally:
        assert server.stop() == 0
    assert count(database_url, "SELECT COUNT(*) FROM runs") == JOBS
    assert count(database_url, "SELECT COUNT(DISTINCT order_id) FROM runs") == JOBS


def test_two_instances_of_two_workers_on_one_postgresql(postgres_cluster):
    """Four processes claim from one queue with SKIP LOCKED and share one @every("1s") lease:
    each job runs once, and the schedule runs once a second, never overlapping itself."""
    url = postgres_cluster.create_database()
    first = start([str(PROGRAM)], env={"SVC_DB": url, "SVC_WORKERS": "2"})
    second = start([str(PROGRAM)], env={"SVC_DB": url, "SVC_WORKERS": "2"})
    try:
        for n, server in enumerate((first, second)):
            enqueue(server, 1 + n * JOBS, JOBS, 2)
        wait_for(lambda: count(url, "SELECT COUNT(*) FROM svc_jobs WHERE state = 'done'")
                 == 2 * JOBS, timeout=90)
        wait_for(lambda: count(url, "SELECT COUNT(*) FROM ticks") >= 4, timeout=15)
    finally:
        assert first.stop() == 0
        assert second.stop() == 0
    assert count(url, "SELECT COUNT(*) FROM runs") == 2 * JOBS
    assert count(url, "SELECT COUNT(DISTINCT order_id) FROM shipped") == 2 * JOBS
    ticks = query(url, "SELECT started, ended, due FROM ticks ORDER BY started")
    for (started, ended, due), (next_started, _, next_due) in zip(ticks, ticks[1:]):
        assert next_started >= ended, ticks  # never overlapping
        # once a period (1 s), not more often: each run is taken when the last one's due time
        # has come, and sets the next a period later (the scheduler's own clock, so a run that
        # starts late on a loaded machine does not make the next look early)
        assert next_due - due >= 1000, ticks
    # Both instances' logs together show the runs, each once.
    runs_logged = (first.log() + second.log()).count("schedule tick ran in")
    assert runs_logged == len(ticks), (runs_logged, ticks)
