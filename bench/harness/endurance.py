"""Capacity and endurance runs against one server: 10,000 connections, the soak, slow clients."""

import json
import subprocess
import threading
import time

from harness import wrk
from harness.servers import RunningServer, ServerSpec, python_client

ECHO_4K = wrk.Case("POST /echo 4 KiB name", "/echo", "echo_4k.lua")
SMALL = wrk.Case("GET /small", "/small")


def settle_fds(server: RunningServer, target: int, timeout: float = 15.0) -> tuple[int, float]:
    """Polls the server's open files until they fall to `target`; returns (count, seconds)."""
    started = time.monotonic()
    count = server.fd_count()
    while count > target and time.monotonic() - started < timeout:
        time.sleep(0.1)
        count = server.fd_count()
    return count, round(time.monotonic() - started, 2)


def capacity(spec: ServerSpec, count: int) -> dict:
    """Opens `count` connections at once, each answered a /health; then closes them all."""
    with RunningServer(spec) as server:
        base_fds, base_rss = server.fd_count(), server.rss_mib()
        client = subprocess.Popen(
            python_client("connections", str(server.port), str(count)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        opened = json.loads(client.stdout.readline())
        held_fds, held_rss = server.fd_count(), server.rss_mib()
        client.stdin.write("close\n")
        client.stdin.flush()
        closed = json.loads(client.stdout.readline())
        client.wait(timeout=30)
        after_fds, settle_s = settle_fds(server, base_fds)
        return {
            "connections": count, **opened, **closed,
            "base_fds": base_fds, "held_fds": held_fds, "after_fds": after_fds, "fd_settle_s": settle_s,
            "base_rss_mib": round(base_rss, 1), "held_rss_mib": round(held_rss, 1),
            "after_rss_mib": round(server.rss_mib(), 1),
        }


def soak(spec: ServerSpec, seconds: int, connections: int = 128, every: int = 10) -> dict:
    """POST /echo 4 KiB on `connections` for `seconds`, sampling RSS and open files."""
    with RunningServer(spec) as server:
        samples = [(0, round(server.rss_mib(), 1), server.fd_count())]
        outcome = {}
        load = threading.Thread(
            target=lambda: outcome.update(result=wrk.run(server.url(""), ECHO_4K, seconds, connections))
        )
        started = time.monotonic()
        load.start()
        for t in range(every, seconds + 1, every):
            time.sleep(max(0.0, started + t - 0.5 - time.monotonic()))
            samples.append((t, round(server.rss_mib(), 1), server.fd_count()))
        load.join()
        after_fds, _ = settle_fds(server, samples[0][2])
        result = outcome["result"]
        return {
            "seconds": seconds, "connections": connections, "requests_per_s": result.requests_per_s,
            "requests": result.requests, "errors": result.errors, "error_detail": result.error_detail,
            "samples": samples, "after_fds": after_fds, "after_rss_mib": round(server.rss_mib(), 1),
        }


def slow_clients(spec: ServerSpec, idle: int, drip: int, deadline: int) -> dict:
    """The /small load alone, then again while idle and drip-feeding connections are open."""
    env = {"SVC_HTTP_REQUEST_WAIT_SECONDS": str(deadline)}
    with RunningServer(spec, env) as server:
        alone = wrk.run(server.url(""), SMALL, deadline)
        client = subprocess.Popen(
            python_client("slow", str(server.port), str(idle), str(drip), str(deadline + 10)),
            stdout=subprocess.PIPE, text=True,
        )
        ready = json.loads(client.stdout.readline())
        fds_with_slow = server.fd_count()
        mixed = wrk.run(server.url(""), SMALL, deadline)
        closes = json.loads(client.stdout.readline())
        client.wait(timeout=30)
        return {
            "deadline_s": deadline, "opened": ready["ready"], "fds_with_slow": fds_with_slow,
            "alone_rps": alone.requests_per_s, "mixed_rps": mixed.requests_per_s,
            "alone_errors": alone.errors, "mixed_errors": mixed.errors,
            "mixed_p99_ms": mixed.p99_ms, **closes, "rss_mib": round(server.rss_mib(), 1),
        }
