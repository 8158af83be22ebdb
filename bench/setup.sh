#!/usr/bin/env bash
# Installs and builds what `make bench` needs, each only where missing or out of date:
# Debian's wrk, golang-go and go-sqlite3 (apt-get); the Go peer (bench/.work/go-server);
# better-sqlite3 and pg for the Node peer (npm, into bench/.work/node), ws for the Node
# WebSocket echo peer (into bench/.work/node-ws); Debian's postgresql
# for the PostgreSQL case (the run starts a private cluster of its own); Debian's nginx-light,
# the physical reference (the run starts its own process, bench/peers/nginx); FastAPI, uvicorn and py-spy in
# their own venv (bench/.work/venv). Nothing it makes is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=bench/.work
mkdir -p "$WORK"
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v go >/dev/null || missing+=(golang-go)
command -v taskset >/dev/null || missing+=(util-linux)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v make >/dev/null && command -v g++ >/dev/null || missing+=(build-essential)
[ -d /usr/share/gocode/src/github.com/mattn/go-sqlite3 ] || missing+=(golang-github-mattn-go-sqlite3-dev)
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench setup: installing ${missing[*]} from Debian"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# The Go peer: GOPATH mode against Debian's packaged go-sqlite3 (no module proxy needed).
if [ ! -x "$WORK/go-server" ] || [ bench/peers/go/server.go -nt "$WORK/go-server" ]; then
    echo "bench setup: building the Go peer"
    (cd bench/peers/go && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$PWD/../../.work/gocache" \
        go build -o ../../.work/go-server server.go)
fi

# The Node peer's SQLite driver (compiled from source when no prebuilt binary can be fetched).
if ! cmp -s bench/peers/node/package.json "$WORK/node/package.json" \
        || [ ! -d "$WORK/node/node_modules/better-sqlite3/build" ]; then
    echo "bench setup: installing better-sqlite3 and pg for the Node peer (a compile can take minutes)"
    mkdir -p "$WORK/node"
    cp bench/peers/node/package.json "$WORK/node/package.json"
    (cd "$WORK/node" && npm install --no-audit --no-fund --loglevel=error)
fi

# The Node WebSocket echo peer of bench/live.py (the ws package: plain JavaScript, no compile).
if ! cmp -s bench/peers/node-ws/package.json "$WORK/node-ws/package.json" \
        || [ ! -d "$WORK/node-ws/node_modules/ws" ]; then
    echo "bench setup: installing ws for the Node WebSocket echo peer"
    mkdir -p "$WORK/node-ws"
    cp bench/peers/node-ws/package.json "$WORK/node-ws/package.json"
    (cd "$WORK/node-ws" && npm install --no-audit --no-fund --loglevel=error)
fi

# FastAPI and py-spy, on the same interpreter as the project's .venv.
if ! cmp -s bench/requirements.txt "$WORK/venv/requirements.txt"; then
    echo "bench setup: creating the FastAPI venv"
    base=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
    "$base" -m venv "$WORK/venv"
    "$WORK/venv/bin/python" -m pip install -q -r bench/requirements.txt
    cp bench/requirements.txt "$WORK/venv/requirements.txt"
fi
echo "bench setup: ready"
