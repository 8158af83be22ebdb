#!/usr/bin/env bash
# How close can any reference-conforming Python server get to the bare ceiling on GET /health?
# Alternates three servers, each fresh and pinned to CPU 0, with wrk pinned to CPU 1:
#   bare     bench/peers/bare_uvloop.py   (the ceiling: fixed bytes, one parser callback)
#   minimal  bench/peers/minimal_http.py  (the ceiling plus the HTTP reference's per-request minimum)
#   svc      examples/workload/workload.svc
# and prints requests/s and the server's CPU time per request for each run.
# Usage: bash bench/floor.sh [rounds=5] [seconds=5]   (needs wrk and taskset; make bench installs wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
seconds=${2:-5}
ticks=$(getconf CLK_TCK)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
free_port() { .venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

for round in $(seq "$rounds"); do
  for name in bare minimal svc; do
    case $name in
      bare) command=(.venv/bin/python bench/peers/bare_uvloop.py) ;;
      minimal) command=(.venv/bin/python bench/peers/minimal_http.py) ;;
      svc) command=(.venv/bin/svcc run examples/workload/workload.svc) ;;
    esac
    port=$(free_port)
    SVC_PORT=$port SVC_LOG=quiet SVC_DB=:memory: taskset -c 0 "${command[@]}" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.2; done
    taskset -c 1 wrk -t1 -c64 -d1s "http://127.0.0.1:$port/health" >/dev/null  # warm-up
    before=$(cpu_ticks "$pid")
    report=$(taskset -c 1 wrk -t1 -c64 -d"${seconds}s" "http://127.0.0.1:$port/health")
    after=$(cpu_ticks "$pid")
    requests=$(echo "$report" | awk '/requests in/ {print $1}')
    rate=$(echo "$report" | awk '/Requests\/sec/ {print $2}')
    echo "round $round $name req/s=$rate cpu_us/req=$(echo "scale=2; ($after - $before) * 1000000 / $ticks / $requests" | bc)"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pid=""
  done
done
