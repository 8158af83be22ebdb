"""What a built executable carries beside its program, on one executable built once
(tests/build/programs/features, a project): run alone under `env -i`, with no svc.toml beside
it, it reads the `[config]` table it was built with (the environment overriding it as under
`svcc run`, a bad value stopping it at start in the same words), answers preflights and limits
clients by its `[cors]` and `[route_limits]` tables, exports traces (the OpenTelemetry SDK and
exporter, which the runtime imports only when tracing is on, are inside) and runs two workers
sharing its SQLite file with SVC_WORKERS=2. One build instead of one per feature: each build
re-assembles the whole executable (docs/reference/commands.md, svc.toml)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.e2e.test_workers import listening_workers, worker_pids
from tests.helpers.executables import (
    POSIX_ONLY, REPO, env_i_command, install_alone, scrubbed_env, start, svcc_build,
    unpack_folders,
)
from tests.helpers.otlp_collector import Collector
from tests.helpers.svc_process import send

pytestmark = [pytest.mark.build, POSIX_ONLY]

PROJECT = REPO / "tests" / "build" / "programs" / "features"
CONFIG_LINE = "built in x3 token:False\n"


@pytest.fixture(scope="module")
def features(build_cache, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("features-dist") / "features"
    result = svcc_build(build_cache, "--project", str(PROJECT), "-o", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    return output


def started(executable: Path, tmp_path: Path, **extra_env: str):
    """The executable copied alone into an empty folder and started there; (server, folder)."""
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    return start(install_alone(executable, folder), folder, tmpdir, **extra_env), folder


# --- [config] -------------------------------------------------------------------------------------

def test_the_built_in_config_table_is_read_without_svc_toml(features, tmp_path):
    server, _ = started(features, tmp_path)
    assert server.stop() == 0, "".join(server.stderr)
    assert server.stdout[0] == CONFIG_LINE


def test_the_environment_overrides_it(features, tmp_path):
    server, _ = started(features, tmp_path, SVC_CONFIG_COUNT="9",
                        SVC_CONFIG_API_TOKEN="hunter2")
    assert server.stop() == 0, "".join(server.stderr)
    assert server.stdout[0] == "built in x9 token:True\n"


def test_a_bad_value_stops_it_at_start_without_showing_the_value(features, tmp_path):
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(features, folder)
    result = subprocess.run(env_i_command(installed, scrubbed_env(tmpdir,
                                                                  SVC_CONFIG_COUNT="nine")),
                            cwd=folder, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "error: config: SVC_CONFIG_COUNT (the environment variable for Settings.count) must be "
        "an i64 (an integer from -9223372036854775808 to 9223372036854775807), written in "
        "decimal digits with an optional sign; its value is not shown\n")


# --- [cors] and [route_limits], with two workers ----------------------------------------------

def test_it_answers_preflights_and_limits_a_route(features, tmp_path):
    server, _ = started(features, tmp_path, SVC_WORKERS="2")
    try:
        asked = send(server.port, "OPTIONS", "/limited", None, {
            "Origin": "http://app.example", "Access-Control-Request-Method": "GET"})
        assert asked.status == 204
        assert asked.headers["access-control-allow-origin"] == "http://app.example"
        statuses = [send(server.port, "GET", "/limited", None, {}).status for _ in range(6)]
        assert statuses == [200, 200, 200, 200, 429, 429]
    finally:
        assert server.stop() == 0, "".join(server.stderr)


# --- traces ------------------------------------------------------------------------------------------

def test_it_sends_its_spans(features, tmp_path):
    collector = Collector().start()
    try:
        server, _ = started(features, tmp_path, SVC_DB="o.sqlite",
                            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
        try:
            status, _, body = server.request("GET", "/one")
            assert (status, body) == (200, b'{"n":1}')
        finally:
            assert server.stop(signal.SIGTERM) == 0, "".join(server.stderr)
        spans = collector.wait_for(lambda s: any(x.kind == "server" for x in s) and s)
    finally:
        collector.stop()
    request = next(s for s in spans if s.kind == "server")
    assert request.name == "GET /one" and request.resource["service.name"] == "features"
    (statement,) = [s for s in spans if s.parent_span_id == request.span_id]
    assert statement.name == "SELECT" and statement.attributes["db.system.name"] == "sqlite"
    assert "traces:" not in "".join(server.stderr)


# --- SVC_WORKERS -------------------------------------------------------------------------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_it_runs_two_workers_sharing_its_database(features, tmp_path):
    server, folder = started(features, tmp_path, SVC_WORKERS="2", SVC_DB="notes.sqlite")
    try:
        (supervisor,) = worker_pids(server.process.pid)  # the bootloader runs one Python
        pids = worker_pids(supervisor)
        assert len(pids) == 2 and listening_workers(server.port, pids) == set(pids)
        ids = [server.json("POST", "/notes", {"text": f"n{i}"})[1]["id"] for i in range(20)]
        assert len(set(ids)) == 20
        assert server.json("GET", "/notes/count") == (200, {"total": 20})
        assert server.json("POST", "/transfer") == (200, {"total": 1_000_000})
        assert (folder / "notes.sqlite").is_file()
    finally:
        assert server.stop(signal.SIGINT, group=True) == 0, "".join(server.stderr)  # Ctrl+C
    assert [pid for pid in pids + [supervisor] if Path(f"/proc/{pid}").exists()] == []
    assert [line for line in server.stdout if line.startswith("listening")] == [
        f"listening on http://127.0.0.1:{server.port}\n"]
    assert unpack_folders(tmp_path / "tmp") == []
    assert not os.path.exists(folder / "notes.sqlite-wal")
