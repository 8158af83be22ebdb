# Two commands matter: `make run` serves the task manager on http://127.0.0.1:8091,
# `make test` runs the whole suite. Both set everything up first, each only what it needs.
# The probe is silent: on a pyenv machine every pythonX.Y has a shim that fails when that
# version is not installed, so its stderr goes to /dev/null too.
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	>/dev/null 2>&1 && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
# What running needs (svcc and its runtime dependencies) and what testing adds (pytest,
# hypothesis, playwright, and PyInstaller for the executable tests), in separate stamps: a
# first `make run` downloads only the first, and `make test` after it adds what is missing.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
NATIVE_STAMP := $(VENV)/.installed-native
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=

.PHONY: run test typecheck test-quick venv native system-deps browser postgres node bench clean

run: native
	$(BIN)/svcc run --project examples/tasks

# The whole suite on the runtime as `make run` serves it (compiled where it could be), and
# the tests of the compiled modules again on their pure-Python source (SVC_NATIVE=0): both must
# work, and a machine without a C compiler runs only the second kind. Only the modules of
# svc.native.MODULES differ between the two runs, so the second takes the `compiled_path` tests
# (tests/native/test_markers.py checks that none is missed) of the runtime, which drive those
# modules directly; the end-to-end tests ran on the compiled modules in the first pass (all
# of them again would add a minute and a half to `make test`, whose whole run must stay under
# ten minutes on two cores). The first pass spreads its tests over TEST_WORKERS processes
# (pytest-xdist): most tests wait on subprocesses and sockets, so 4 keep 2 cores busy; `make
# test TEST_WORKERS=0` runs them in this process.
TEST_WORKERS ?= 4
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
PURE_XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n 2 --dist loadfile)
PURE_LOG := .pure-python-tests.log
# mypy (typecheck) and the pure-Python pass (on 2 workers, its output kept in $(PURE_LOG) and
# shown after the first pass's) run beside the first pass, whose workers mostly wait on
# subprocesses and sockets: the first pass leaves a fifth of the two cores idle. A failure
# of either fails the target as a test's would.
# The compiled runtime builds while pip installs what testing adds: the build keeps a core
# busy, pip mostly waits on the network (a clean `make test` starts half a minute sooner).
# Then every module is compiled to bytecode once: the suite starts `svcc` about a thousand
# times, and where PYTHONDONTWRITEBYTECODE is set (CI images set it) each start would compile
# svc's sources again (measured: `svcc check` of a small file, 0.32 s of CPU, 0.19 s with the
# bytecode there).
# The build imports svc from src/ itself, so pip reinstalling the editable svc meanwhile
# cannot disturb it; mypyc came with $(NATIVE_STAMP), before both.
test: $(NATIVE_STAMP) browser postgres node
	@PYTHONPATH=src $(BIN)/python -m svc.native.build & native=$$!; \
	$(MAKE) --no-print-directory $(TEST_STAMP); installed=$$?; \
	wait $$native || exit 1; exit $$installed
	@$(BIN)/python -m compileall -q -j 0 src tests > /dev/null
	@$(BIN)/mypy & typecheck=$$!; \
	SVC_NATIVE=0 $(BIN)/python -m pytest $(PURE_XDIST) -q \
		-m 'compiled_path and not build and not ui' tests/runtime $(PYTEST_ARGS) \
		> $(PURE_LOG) 2>&1 & pure=$$!; \
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS); status=$$?; \
	wait $$typecheck || { echo "error: mypy found type errors (above)" >&2; status=1; }; \
	echo "--- the compiled modules' tests on their pure-Python source (SVC_NATIVE=0):"; \
	if wait $$pure; then tail -n 1 $(PURE_LOG); else status=1; cat $(PURE_LOG); \
		echo "error: the tests on the pure-Python modules failed (above)" >&2; fi; \
	rm -f $(PURE_LOG); exit $$status

# All of src/svc type-checked with mypy (the settings are pyproject.toml's [tool.mypy]).
typecheck: $(TEST_STAMP)
	$(BIN)/mypy

# The quick local loop: everything but the slow executable builds.
test-quick: $(TEST_STAMP) native postgres
	$(BIN)/python -m pytest $(XDIST) -m 'not build' $(PYTEST_ARGS)

venv: $(RUN_STAMP)

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "error: Python 3.11 or newer is required" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(TEST_STAMP): pyproject.toml $(RUN_STAMP)
	$(BIN)/python -m pip install -q -e '.[test,build]'
	touch $@

# The request path's modules compiled ahead of time with mypyc (svc.native), where a C compiler
# exists: mypyc is installed only there. `python -m svc.native.build` rebuilds only when a
# compiled module's source changed, and says why when it cannot build (the runtime then stays
# pure Python, complete but slower).
native: $(NATIVE_STAMP)
	$(BIN)/python -m svc.native.build

$(NATIVE_STAMP): pyproject.toml $(RUN_STAMP)
	@if command -v cc >/dev/null 2>&1; then $(BIN)/python -m pip install -q -e '.[native]'; fi
	touch $@

# Debian's Chromium for the UI tests, installed only where missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the UI tests"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }

# Debian's PostgreSQL for the database tests, installed only where missing. The tests never
# use its service: each session starts a private cluster (initdb, pg_ctl) in a temporary
# folder, on a free port of 127.0.0.1. Debian keeps the binaries in
# /usr/lib/postgresql/<version>/bin, off the PATH.
postgres:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || { \
		echo "installing Debian's postgresql for the database tests"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq postgresql; }

# Debian's Node.js and npm for the client tests (tsc --strict, a client run from Node) and the
# VS Code extension's, installed only where node is missing.
node:
	@command -v node >/dev/null 2>&1 || { \
		echo "installing Debian's nodejs and npm for the client tests"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm; }

bench: native
	bash bench/setup.sh
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# Bench-only: a short trial of the harness (writes bench/.work/RESULTS-quick.md), and py-spy
# profiles of the svc server under each load case (bench/.work/profile/).
.PHONY: bench-quick bench-profile
bench-quick: native
	bash bench/setup.sh
	$(BIN)/python bench/run.py --quick $(BENCH_ARGS)

bench-profile: native
	bash bench/setup.sh
	$(BIN)/python bench/profile_svc.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .svc-cache src/svc/native/built
