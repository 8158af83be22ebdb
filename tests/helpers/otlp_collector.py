"""A stand-in for an OpenTelemetry collector: OTLP/HTTP on 127.0.0.1, traces only.

It accepts `POST /v1/traces` with a protobuf `ExportTraceServiceRequest` (decoded with
opentelemetry-proto, which the exporter itself depends on) and keeps every span as a
`Span`, ids in hex as they appear in a `traceparent` field. Tests point a server at it with
OTEL_EXPORTER_OTLP_ENDPOINT=collector.url and wait for the spans they expect.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer",
         5: "consumer"}
STATUSES = {0: "unset", 1: "ok", 2: "error"}


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root span
    kind: str
    attributes: dict[str, Any]
    status: str
    status_message: str
    start_ns: int
    end_ns: int
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    found = getattr(value, which)
    if which == "array_value":
        return [_value(v) for v in found.values]
    return found


def _attributes(pairs) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


class Collector:
    """Start with `start()`; `spans` grows as exports arrive; `stop()` closes it."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.posts = 0
        self.bad_posts: list[str] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, port: int = 0) -> Collector:
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces" or \
                        self.headers.get("Content-Type") != "application/x-protobuf":
                    collector.bad_posts.append(f"{self.path} {self.headers.get('Content-Type')}")
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.add(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def add(self, request: ExportTraceServiceRequest) -> None:
        found = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(Span(
                        name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(), kind=KINDS[span.kind],
                        attributes=_attributes(span.attributes),
                        status=STATUSES[span.status.code], status_message=span.status.message,
                        start_ns=span.start_time_unix_nano, end_ns=span.end_time_unix_nano,
                        resource=resource, scope=scope_spans.scope.name))
        with self.lock:
            self.posts += 1
            self.spans.extend(found)

    def wait_for(self, condition: Callable[[list[Span]], Any], timeout: float = 15.0) -> Any:
        """The first true value of `condition(spans)` within `timeout` seconds, else the
        last value (false)."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                spans = list(self.spans)
            value = condition(spans)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.05)

    def named(self, name: str) -> list[Span]:
        with self.lock:
            return [span for span in self.spans if span.name == name]
