"""PostgreSQL (and SQLite) under contention: the ledger of issue 38 (bench/ledger.svc).

4 accounts, 300 transfers between random pairs from 32 concurrent clients (harness/ledger.py),
each one transaction. Per variant, fresh servers and a fresh database; the variants are the
database, one or two instances on it, and three routes: rows locked in request order by a
handler the compiler proves safe to run again after a clash (`/transfers`), the same after a
log line, which is therefore not run again (`/transfers-logged`: how any handler fared before
runs again), and rows locked in id order (`/transfers-in-order`). The servers run on both CPUs,
like the "every core" section.
"""

from harness import ledger, postgres
from harness.servers import ROOT, RunningServer, ServerSpec

ALL_CPUS = "0,1"
SPEC = ServerSpec("svc-ledger", (str(ROOT / ".venv/bin/svcc"), "run", str(ledger.PROGRAM)),
                  env={"SVC_LOG": "quiet"})
DATABASES = ("postgresql", "sqlite")
INSTANCES = (1, 2)
ROUTES = {ledger.REQUEST_ORDER: "request order, run again",
          ledger.LOGGED: "request order, not run again",
          ledger.ID_ORDER: "id order, run again"}


def measure_variant(kind: str, instances: int, path: str, log) -> dict:
    route = path.strip("/").replace("-", "_")
    url = postgres.fresh_url(kind, f"ledger_{kind}_{instances}_{route}")
    servers = [RunningServer(SPEC, {"SVC_DB": url}, cpus=ALL_CPUS) for _ in range(instances)]
    try:
        for server in servers:
            server.wait_ready()
        ledger.open_accounts(servers[0].port)
        outcome = ledger.run([server.port for server in servers], path)
        totals = ledger.totals(servers[0].port)
    finally:
        for server in servers:
            server.stop()
    if totals != {"total": ledger.ACCOUNTS * ledger.OPENING_BALANCE,
                  "transfers": outcome.count(200)}:
        raise RuntimeError(f"totals not kept: {totals} after {outcome.count(200)} transfers")
    result = {"per_s": outcome.sent / outcome.seconds, "ok": outcome.count(200),
              "funds": outcome.count(409), "busy": outcome.count(503),
              "other": outcome.sent - outcome.count(200) - outcome.count(409)
              - outcome.count(503), "sent": outcome.sent}
    log(f"  contention {kind:10} x{instances} {ROUTES[path]:28}: {result['per_s']:6.0f} "
        f"transfers/s, {result['ok']} done, {result['funds']} 409, {result['busy']} 503")
    return result


def run(mode: dict, log, incidents: list) -> dict:
    """results[database][instances][route] = the run whose throughput is the median."""
    runs: dict = {}
    for round_no in range(1, mode["rounds"] + 1):
        log(f"contention round {round_no}")
        for kind in DATABASES:
            for instances in INSTANCES:
                for path in ROUTES:
                    try:
                        measured = measure_variant(kind, instances, path, log)
                    except (RuntimeError, OSError) as failure:
                        incidents.append(f"contention round {round_no}, {kind} x{instances} "
                                         f"{path}: {failure}")
                        log(f"  INCIDENT: {failure}")
                        continue
                    runs.setdefault(kind, {}).setdefault(str(instances), {}) \
                        .setdefault(path, []).append(measured)
    return {kind: {instances: {path: sorted(rounds, key=lambda r: r["per_s"])[len(rounds) // 2]
                               for path, rounds in by_path.items()}
                   for instances, by_path in by_instances.items()}
            for kind, by_instances in runs.items()}


def section(results: dict | None) -> list[str]:
    """The report's "Contention" section (bench/RESULTS.md)."""
    if not results:
        return []
    lines = [
        "## Contention: transfers between 4 accounts", "",
        "bench/ledger.svc, issue 38's workload: 300 transfers between random pairs of 4 "
        "accounts from 32 concurrent clients, each one transaction (SELECT the source, UPDATE "
        "it guarded by its balance, UPDATE the destination, INSERT a transfer, SELECT both), "
        "fresh servers and database per variant, on both CPUs; the run with the median "
        "throughput of the rounds. *Answered* counts the transfers that got their real answer "
        "(200, or 409 for missing funds); the rest are 503s, each saying why. The totals are "
        "checked after every run.", "",
        "| database | instances | locking, clashes | transfers/s | answered | 200 | 409 | 503 |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for kind, by_instances in results.items():
        for instances, by_path in by_instances.items():
            for path, r in by_path.items():
                answered = (r["ok"] + r["funds"]) / r["sent"]
                lines.append(f"| {kind} | {instances} | {ROUTES[path]} | {r['per_s']:,.0f} "
                             f"| {answered:.0%} | {r['ok']} | {r['funds']} | {r['busy']} |")
    return lines + [""]
