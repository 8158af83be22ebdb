"""A built executable exports traces like `svcc run`: tests/e2e/programs/observability.svc built
with `svcc build`, run alone under `env -i` with OTEL_EXPORTER_OTLP_ENDPOINT pointing at the
collector stand-in (tests/helpers/otlp_collector.py): the OpenTelemetry SDK and exporter, which
the runtime imports only when tracing is on, are in the executable."""

from __future__ import annotations

import signal

import pytest
from tests.helpers.executables import POSIX_ONLY, install_alone, start, svcc_build
from tests.helpers.otlp_collector import Collector

pytestmark = [pytest.mark.build, POSIX_ONLY]


def test_a_built_executable_sends_its_spans(build_cache, tmp_path):
    output = tmp_path / "dist" / "observability"
    result = svcc_build(build_cache, "tests/e2e/programs/observability.svc", "-o", str(output))
    assert result.returncode == 0, result.stdout + result.stderr
    folder, tmpdir = tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    installed = install_alone(output, folder)
    collector = Collector().start()
    try:
        server = start(installed, folder, tmpdir, SVC_DB="o.sqlite",
                       OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
        try:
            status, _, body = server.request("GET", "/one")
            assert (status, body) == (200, b'{"n":1}')
        finally:
            assert server.stop(signal.SIGTERM) == 0, "".join(server.stderr)
        spans = collector.wait_for(lambda s: len(s) >= 2 and s)
    finally:
        collector.stop()
    request = next(s for s in spans if s.kind == "server")
    assert request.name == "GET /one" and request.resource["service.name"] == "observability"
    (statement,) = [s for s in spans if s.parent_span_id == request.span_id]
    assert statement.name == "SELECT" and statement.attributes["db.system.name"] == "sqlite"
    assert "traces:" not in "".join(server.stderr)
