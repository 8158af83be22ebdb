"""Durable jobs: jobs per second through enqueue -> claim -> run -> done, beside a plain INSERT
of the same row, on SQLite and PostgreSQL, with 1 and 2 workers (bench/jobs.svc).

Per variant, one fresh server and database: first `POST /insert/N` (N INSERTs, each its own
statement, in the handler: the rows per second the database takes from one program), then
`POST /enqueue/N` (N jobs queued in one transaction) and, from the moment it was sent, the time
until svc_jobs holds N done rows, read from outside every 20 ms. Both write the same row to the
same table; a job also writes its own row, is claimed, and is marked done, which is what the
ratio shows. The server runs on both CPUs (`taskset -c 0,1`) like the "every core" section; the
PostgreSQL cluster is the run's private one (harness/postgres.py).
"""

import time
import urllib.request

from harness import postgres
from harness.servers import ROOT, RunningServer, ServerSpec

ALL_CPUS = "0,1"
SPEC = ServerSpec("svc-jobs", (str(ROOT / ".venv/bin/svcc"), "run", "bench/jobs.svc"),
                  env={"SVC_LOG": "quiet"})
DATABASES = ("sqlite", "postgresql")
WORKERS = (1, 2)


class Counter:
    """Counts rows from outside the server over one connection kept open for the whole
    variant (a PostgreSQL connection per poll would cost the cluster a backend each time)."""

    def __init__(self, url: str) -> None:
        self.url = url
        if url.startswith("postgresql://"):
            import asyncio

            import asyncpg

            self.loop = asyncio.new_event_loop()
            self.conn = self.loop.run_until_complete(asyncpg.connect(url))
        else:
            import sqlite3

            self.conn = sqlite3.connect(url, timeout=30)

    def count(self, sql: str) -> int:
        if self.url.startswith("postgresql://"):
            return self.loop.run_until_complete(self.conn.fetchval(sql))
        return self.conn.execute(sql).fetchone()[0]

    def close(self) -> None:
        if self.url.startswith("postgresql://"):
            self.loop.run_until_complete(self.conn.close())
            self.loop.close()
        else:
            self.conn.close()


def _post(port: int, path: str, timeout: float = 600) -> None:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=b"")
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        if answer.status != 200:
            raise RuntimeError(f"POST {path} answered {answer.status}")


def measure_variant(kind: str, workers: int, count: int, log) -> dict:
    url = postgres.fresh_url(kind, f"jobs_{kind}_{workers}")
    env = {"SVC_DB": url, "SVC_WORKERS": str(workers)}
    with RunningServer(SPEC, env, cpus=ALL_CPUS) as server:
        counter = Counter(url)
        try:
            started = time.perf_counter()
            _post(server.port, f"/insert/{count}")
            insert_s = time.perf_counter() - started
            started = time.perf_counter()
            _post(server.port, f"/enqueue/{count}")
            enqueue_s = time.perf_counter() - started
            give_up = time.monotonic() + 600
            while counter.count("SELECT COUNT(*) FROM svc_jobs WHERE state = 'done'") < count:
                if time.monotonic() > give_up:
                    raise RuntimeError(f"{count} jobs not done within 600 s")
                time.sleep(0.02)
            jobs_s = time.perf_counter() - started
            rows = counter.count("SELECT COUNT(*) FROM events")
        finally:
            counter.close()
    if rows != 2 * count:
        raise RuntimeError(f"events holds {rows} rows, not {2 * count}: a job ran twice or not")
    result = {"insert_per_s": count / insert_s, "enqueue_per_s": count / enqueue_s,
              "jobs_per_s": count / jobs_s}
    log(f"  jobs {kind:10} x{workers}: plain INSERT {result['insert_per_s']:8.0f}/s  enqueue "
        f"{result['enqueue_per_s']:8.0f}/s  enqueue->done {result['jobs_per_s']:8.0f} jobs/s")
    return result


def run(mode: dict, log, incidents: list) -> dict:
    """results[database][workers] = the medians over the rounds."""
    count = 1000 if mode["rounds"] == 1 else 5000
    runs: dict = {}
    for round_no in range(1, mode["rounds"] + 1):
        log(f"jobs round {round_no} ({count} jobs per variant)")
        for kind in DATABASES:
            for workers in WORKERS:
                try:
                    measured = measure_variant(kind, workers, count, log)
                except (RuntimeError, OSError) as failure:
                    incidents.append(f"jobs round {round_no}, {kind} x{workers}: {failure}")
                    log(f"  INCIDENT: {failure}")
                    continue
                runs.setdefault(kind, {}).setdefault(str(workers), []).append(measured)
    return {"count": count, "results": {
        kind: {workers: {key: sorted(r[key] for r in rounds)[len(rounds) // 2]
                         for key in rounds[0]} for workers, rounds in by_workers.items()}
        for kind, by_workers in runs.items()}}


def section(jobs: dict | None) -> list[str]:
    """The report's "Durable jobs" section (bench/RESULTS.md)."""
    if not jobs:
        return []
    lines = [
        "## Durable jobs", "",
        f"bench/jobs.svc, one fresh server and database per variant and round, on both CPUs "
        f"(`taskset -c 0,1`): {jobs['count']:,} plain INSERTs of a row made by one handler, "
        f"then {jobs['count']:,} jobs enqueued in one transaction and timed until every one is "
        "done (read from outside every 20 ms); each job's run INSERTs the same row. "
        "Medians over the rounds. A job costs its enqueue INSERT, its share of a claim, its "
        "own INSERT and its done UPDATE: the last column is what that costs next to the plain "
        "row.", "",
        "| database | workers | plain INSERT rows/s | enqueue jobs/s | enqueue → done jobs/s "
        "| jobs/s vs INSERT |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, by_workers in jobs["results"].items():
        for workers, r in by_workers.items():
            lines.append(f"| {kind} | {workers} | {r['insert_per_s']:,.0f} "
                         f"| {r['enqueue_per_s']:,.0f} | {r['jobs_per_s']:,.0f} "
                         f"| {r['jobs_per_s'] / r['insert_per_s']:.2f}× |")
    return lines + [""]
