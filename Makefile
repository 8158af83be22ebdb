# Two commands matter: `make run` serves the task manager on http://127.0.0.1:8091,
# `make test` runs the whole suite. Both set everything up first.
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=

.PHONY: run test test-quick venv system-deps browser bench clean

run: $(STAMP)
	$(BIN)/svcc run --project examples/tasks

test: $(STAMP) browser
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The quick local loop: everything but the slow executable builds.
test-quick: $(STAMP)
	$(BIN)/python -m pytest -m 'not build' $(PYTEST_ARGS)

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: Python 3.11 or newer is required" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# Debian's Chromium for the UI tests, installed only where missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the UI tests"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }

bench: $(STAMP)
	bash bench/setup.sh
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# Bench-only: a short trial of the harness (writes bench/.work/RESULTS-quick.md), and py-spy
# profiles of the svc server under each load case (bench/.work/profile/).
.PHONY: bench-quick bench-profile
bench-quick: $(STAMP)
	bash bench/setup.sh
	$(BIN)/python bench/run.py --quick $(BENCH_ARGS)

bench-profile: $(STAMP)
	bash bench/setup.sh
	$(BIN)/python bench/profile_svc.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .svc-cache
