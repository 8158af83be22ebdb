"""Prometheus metrics (`SVC_METRICS_PORT`): what is counted, in plain Python, per process.

Nothing here runs unless `SVC_METRICS_PORT` is set, and nothing here imports the Prometheus
client library: the endpoint (svc.runtime.observability.metrics_endpoint, imported only then) turns the
counts into metric families at scrape time, through a custom collector.

The hot path stays cheap: the server's access hook (serverlog.ServerLog.access) calls
`ProcessMetrics.observe` once per answered request, which adds to a dict and a list of
histogram buckets of the request's route. The rest is read when a snapshot is taken (the
in-flight count the connections keep, the database queues and pools) or counted where it
happens, off the request path (jobs enqueued and run, database calls that had to wait).

A snapshot is plain data (lists and numbers, JSON-ready): with one server process the
endpoint takes this process's snapshot at each scrape; with `SVC_WORKERS` above 1 each worker
writes its snapshot to a file in a private folder at most once per sweep tick (0.1 s, only
when it changed), and the supervisor's endpoint sums the files (`merge`). Counters of a
worker that died are kept (the supervisor folds its last file into the retired counts), its
gauges are not.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from svc.runtime.observability.accesslog import DURATION_BUCKETS, RequestCounts
from svc.runtime.observability.accesslog import KNOWN_METHODS, NO_ROUTE  # noqa: F401 - documented here
from svc.runtime import services
from svc.runtime.lib.support import SvcError
from svc.runtime.services import current as current_services

if TYPE_CHECKING:
    from svc.runtime.http.connection import App

VARIABLE = "SVC_METRICS_PORT"

#: Waits for a database's queue or pool, seconds.
WAIT_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5)
#: Job runs, seconds (a job's deadline may be minutes).
JOB_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)
#: Outbound calls (http_get, http_send), seconds: within a request's limit (2 s) mostly, 30 s
#: at most.
OUTBOUND_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                    10.0, 30.0)

#: The request durations' buckets (DURATION_BUCKETS), the route label of a request no route
#: answered (NO_ROUTE, "none") and the methods counted by name (KNOWN_METHODS, any other is
#: "other") are those of svc.runtime.observability.accesslog, which counts requests.

#: Every metric family: name → (type, help, label names, histogram buckets). The names are
#: those of the exposition (a counter gets `_total` there).
FAMILIES: dict[str, tuple[str, str, tuple[str, ...], tuple[float, ...]]] = {
    "svc_http_requests": (
        "counter", "HTTP requests answered, by route pattern (none: no route took it), method "
        "and status", ("route", "method", "status"), ()),
    "svc_http_request_duration_seconds": (
        "histogram", "Time from a request's complete headers to its answer, by route pattern",
        ("route",), DURATION_BUCKETS),
    "svc_http_requests_in_flight": (
        "gauge", "Requests whose handler is running (waiting on the database, say) or whose "
        "streamed answer is being written", (), ()),
    "svc_db_queue_depth": (
        "gauge", "Database calls waiting: on SQLite, queued for the database's thread or "
        "waiting for room in its queue; on PostgreSQL, waiting for a free connection",
        ("database",), ()),
    "svc_db_wait_seconds": (
        "histogram", "How long database calls that had to wait waited: for room in an SQLite "
        "database's queue, or for a free PostgreSQL connection", ("database",), WAIT_BUCKETS),
    "svc_db_pool_size": (
        "gauge", "The most connections of a PostgreSQL database's pool (SVC_DB_POOL_SIZE), "
        "summed over the serving processes", ("database",), ()),
    "svc_db_pool_connections": (
        "gauge", "Open connections of a PostgreSQL database's pool", ("database",), ()),
    "svc_db_pool_connections_in_use": (
        "gauge", "Connections of a PostgreSQL database's pool lent to a call or transaction",
        ("database",), ()),
    "svc_jobs_enqueued": (
        "counter", "Jobs enqueued by this program (a job enqueued in a transaction that was "
        "rolled back counts too)", ("job",), ()),
    "svc_job_runs": (
        "counter", "Job runs, by outcome: done, retry (failed, tried again later), dead "
        "(failed, no attempts left)", ("job", "outcome"), ()),
    "svc_job_run_duration_seconds": (
        "histogram", "How long job runs took", ("job",), JOB_BUCKETS),
    "svc_http_client_requests": (
        "counter", "Outbound calls (http_get, http_send), by upstream host:port, method and "
        "outcome: the upstream's status, or timeout, bad_gateway (failed) or cancelled (the "
        "calling request ended first)", ("host", "method", "outcome"), ()),
    "svc_http_client_request_duration_seconds": (
        "histogram", "How long outbound calls took, answer read or failed, by upstream "
        "host:port", ("host",), OUTBOUND_BUCKETS),
    "svc_python_threads_busy": (
        "gauge", "Threads running a blocking @python function (a call its request gave up "
        "on included, until it ends)", (), ()),
    # The topics service's (svc.runtime.topics.service): its gauges hook fills them all, its
    # counters being this process's totals since its service started.
    "svc_topic_subscribers": (
        "gauge", "Subscriptions open in this process, by topic", ("topic",), ()),
    "svc_topic_messages_published": (
        "counter", "Messages published by this process", (), ()),
    "svc_topic_messages_delivered": (
        "counter", "Messages put in a subscription's queue (one per subscriber reached)", (), ()),
    "svc_topic_messages_received": (
        "counter", "Messages from other processes delivered to subscribers here", (), ()),
    "svc_topic_messages_dropped": (
        "counter", "Messages lost here, by reason: slow_subscriber (a subscription's queue was "
        "full), not_sent (not passed to other processes: the database was down, refused them or "
        "did not keep up), missed (sent by another process, never seen here)", ("reason",), ()),
    "svc_topic_bus_up": (
        "gauge", "Serving processes whose live delivery to the other processes works now (1 "
        "each), by database dialect", ("dialect",), ()),
}
COUNTERS = tuple(name for name, spec in FAMILIES.items() if spec[0] == "counter")
HISTOGRAMS = tuple(name for name, spec in FAMILIES.items() if spec[0] == "histogram")
GAUGES = tuple(name for name, spec in FAMILIES.items() if spec[0] == "gauge")

def port_from_env() -> int | None | SvcError:
    """`SVC_METRICS_PORT`: a port number from 1 to 65535, or None when unset (no metrics)."""
    raw = os.environ.get(VARIABLE)
    if raw is None:
        return None
    text = raw.strip()
    if text.isascii() and text.isdigit() and 1 <= int(text) <= 65535:
        return int(text)
    return SvcError("invalid", f"{VARIABLE} must be a port number from 1 to 65535 "
                               f"(got {raw!r})")


class Histogram:
    """Bucket counts (the last one past every bound) and the sum of what was observed."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value


class ProcessMetrics:
    """What one serving process counted."""

    def __init__(self) -> None:
        #: the requests, counted by the access hook (compiled: accesslog.RequestCounts)
        self.requests = RequestCounts()
        self.apps: list[App] = []  # the servers whose in-flight requests are counted
        self.jobs_enqueued: dict[str, int] = {}
        self.job_runs: dict[tuple[str, str], int] = {}
        self.job_durations: dict[str, Histogram] = {}
        self.db_waits: dict[str, Histogram] = {}
        self.outbound_calls: dict[tuple[str, str, str], int] = {}  # (host, method, outcome)
        self.outbound_durations: dict[str, Histogram] = {}
        self.written = ""  # the snapshot last written to this worker's file

    def snapshot(self) -> dict:
        """Everything counted so far, as plain data (see `merge`)."""
        counters: dict[str, list] = {name: [] for name in COUNTERS}
        histograms: dict[str, list] = {name: [] for name in HISTOGRAMS}
        gauges: dict[str, list] = {name: [] for name in GAUGES}
        for stats in list(self.requests.routes.values()):
            for method, status, count in stats.statuses_counted():
                counters["svc_http_requests"].append([[stats.label, method, str(status)], count])
            buckets, total = stats.histogram()
            histograms["svc_http_request_duration_seconds"].append([[stats.label], buckets, total])
        gauges["svc_http_requests_in_flight"].append([[], sum(app.in_flight for app in self.apps)])
        for name, count in self.jobs_enqueued.items():
            counters["svc_jobs_enqueued"].append([[name], count])
        for (name, outcome), count in self.job_runs.items():
            counters["svc_job_runs"].append([[name, outcome], count])
        for name, hist in self.job_durations.items():
            histograms["svc_job_run_duration_seconds"].append([[name], hist.counts, hist.total])
        for name, hist in self.db_waits.items():
            histograms["svc_db_wait_seconds"].append([[name], hist.counts, hist.total])
        for (host, method, outcome), count in self.outbound_calls.items():
            counters["svc_http_client_requests"].append([[host, method, outcome], count])
        for host, hist in self.outbound_durations.items():
            histograms["svc_http_client_request_duration_seconds"].append(
                [[host], hist.counts, hist.total])
        services.add_gauges(gauges)  # the databases' queues and pools, the topics' counts
        for name in COUNTERS:  # a joined module's totals come with its gauges: counters still
            counters[name].extend(gauges.pop(name, ()))
        return {"counters": counters, "histograms": histograms, "gauges": gauges}


def database_label(url: str) -> str:
    """A PostgreSQL URL as a label: `postgresql://host:port/name`, without the user, the
    password or the parameters."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    return f"{scheme}://{rest.rpartition('@')[2].partition('?')[0]}"


# --- merging snapshots (workers) ----------------------------------------------------------------

def merge(snapshots: list[dict], counts_only: list[dict] | None = None) -> dict:
    """The sum of `snapshots` (counters, histograms and gauges) and of `counts_only` (their
    counters and histograms: the workers that died), same label values added up."""
    counters: dict[str, dict[tuple, float]] = {name: {} for name in COUNTERS}
    histograms: dict[str, dict[tuple, list]] = {name: {} for name in HISTOGRAMS}
    gauges: dict[str, dict[tuple, float]] = {name: {} for name in GAUGES}
    for snapshot, with_gauges in [(s, True) for s in snapshots] + \
                                 [(s, False) for s in counts_only or ()]:
        for name, rows in snapshot.get("counters", {}).items():
            into = counters.setdefault(name, {})
            for labels, value in rows:
                key = tuple(labels)
                into[key] = into.get(key, 0) + value
        for name, rows in snapshot.get("histograms", {}).items():
            hist_into = histograms.setdefault(name, {})
            for labels, counts, total in rows:
                key = tuple(labels)
                found = hist_into.get(key)
                if found is None:
                    hist_into[key] = [list(counts), total]
                else:
                    found[0] = [a + b for a, b in zip(found[0], counts)]
                    found[1] += total
        if with_gauges:
            for name, rows in snapshot.get("gauges", {}).items():
                into = gauges.setdefault(name, {})
                for labels, value in rows:
                    key = tuple(labels)
                    into[key] = into.get(key, 0) + value
    return {
        "counters": {name: [[list(k), v] for k, v in rows.items()]
                     for name, rows in counters.items()},
        "histograms": {name: [[list(k), v[0], v[1]] for k, v in rows.items()]
                       for name, rows in histograms.items()},
        "gauges": {name: [[list(k), v] for k, v in rows.items()]
                   for name, rows in gauges.items()},
    }


# --- switching on, and the workers' files -------------------------------------------------------

def start(app: App) -> ProcessMetrics:
    """Count for this process (called by the server once `SVC_METRICS_PORT` was read): the
    program's services keep the counts, which count the requests of `app` from now on."""
    owner = current_services()
    if owner.metrics is None:
        owner.metrics = ProcessMetrics()
    owner.metrics.apps.append(app)
    return owner.metrics


def stop(app: App) -> None:
    counts = current_services().metrics
    if counts is not None and app in counts.apps:
        counts.apps.remove(app)


def worker_file(folder: str, pid: int) -> str:
    return os.path.join(folder, f"{pid}.json")


def write_snapshot() -> None:
    """In a worker: write this process's snapshot to its file, when it changed (a sweep hook:
    at most once per tick). Written to a temporary name and renamed, so the supervisor never
    reads half a file."""
    owner = current_services()
    counts, folder = owner.metrics, owner.metrics_folder
    if counts is None or folder is None:
        return
    text = json.dumps(counts.snapshot(), separators=(",", ":"))
    if text == counts.written:
        return
    path = worker_file(folder, os.getpid())
    partial = f"{path}.partial"
    try:
        with open(partial, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, path)
    except OSError:  # the folder went away (the supervisor is stopping): nothing to report to
        return
    counts.written = text


def read_snapshot(folder: str, pid: int) -> dict | None:
    """A worker's last snapshot, or None when it wrote none (yet) or it cannot be read."""
    try:
        with open(worker_file(folder, pid), encoding="utf-8") as source:
            found = json.load(source)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


# --- hooks of the database layer and the job runner (no-ops while metrics are off) ---------------

def db_waited(database: str, seconds: float) -> None:
    """A database call waited `seconds` for room in a queue or for a connection."""
    counts = current_services().metrics
    if counts is None:
        return
    hist = counts.db_waits.get(database)
    if hist is None:
        hist = counts.db_waits[database] = Histogram(WAIT_BUCKETS)
    hist.observe(seconds)


def job_enqueued(name: str) -> None:
    counts = current_services().metrics
    if counts is not None:
        counts.jobs_enqueued[name] = counts.jobs_enqueued.get(name, 0) + 1


def job_ran(name: str, outcome: str, seconds: float) -> None:
    """A run of job `name` ended: `done`, `retry` or `dead`."""
    counts = current_services().metrics
    if counts is None:
        return
    key = (name, outcome)
    counts.job_runs[key] = counts.job_runs.get(key, 0) + 1
    hist = counts.job_durations.get(name)
    if hist is None:
        hist = counts.job_durations[name] = Histogram(JOB_BUCKETS)
    hist.observe(seconds)


def outbound_called(host: str, method: str, outcome: str, seconds: float) -> None:
    """An outbound call to `host` ("127.0.0.1:8001") ended: `outcome` is the status as text or
    the error kind (svc.runtime.lib.outbound)."""
    counts = current_services().metrics
    if counts is None:
        return
    key = (host, method, outcome)
    counts.outbound_calls[key] = counts.outbound_calls.get(key, 0) + 1
    hist = counts.outbound_durations.get(host)
    if hist is None:
        hist = counts.outbound_durations[host] = Histogram(OUTBOUND_BUCKETS)
    hist.observe(seconds)
