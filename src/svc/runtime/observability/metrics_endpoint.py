"""The metrics endpoint: `GET /metrics` on 127.0.0.1:`SVC_METRICS_PORT`, in Prometheus' text
format, made by the official client library (prometheus_client).

Imported only when `SVC_METRICS_PORT` is set. The counts come from svc.runtime.observability.metrics as
plain data; `SvcCollector` turns them into metric families at scrape time, and
`prometheus_client.exposition` writes them in the format the scraper asks for (`Accept`:
the classic text format, or OpenMetrics). The endpoint runs on the serving process's event
loop (one process) or the supervisor's (workers): no thread, so nothing is shared with a fork.

It is a deliberately small HTTP/1.1 server: one request per connection, answered and closed;
`GET` or `HEAD` of `/metrics` (200), any other path 404, any other method 405, a request
head over 8 KiB or not complete within 5 s is dropped.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable, Iterator

from prometheus_client.core import (
    CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry

from svc.runtime.observability.metrics import FAMILIES
from svc.runtime.lib.support import SvcError

HEAD_LIMIT = 8192
READ_SECONDS = 5.0


class SvcCollector(Collector):
    """The families of svc.runtime.observability.metrics.FAMILIES, from a merged snapshot taken per scrape."""

    def __init__(self, source: Callable[[], dict]) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        merged = self.source()
        for name, (kind, help_text, labels, bounds) in FAMILIES.items():
            family: Metric
            if kind == "counter":
                counter = CounterMetricFamily(name, help_text, labels=list(labels))
                for values, count in merged["counters"].get(name, []):
                    counter.add_metric(values, count)
                family = counter
            elif kind == "gauge":
                gauge = GaugeMetricFamily(name, help_text, labels=list(labels))
                for values, value in merged["gauges"].get(name, []):
                    gauge.add_metric(values, value)
                if not labels and not merged["gauges"].get(name):
                    gauge.add_metric([], 0)
                family = gauge
            else:
                histogram = HistogramMetricFamily(name, help_text, labels=list(labels))
                for values, counts, total in merged["histograms"].get(name, []):
                    cumulative, buckets = 0, []
                    for bound, count in zip((*bounds, float("inf")), counts):
                        cumulative += count
                        buckets.append((_bound_text(bound), cumulative))
                    histogram.add_metric(values, buckets, total)
                family = histogram
            yield family


def _bound_text(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(float(bound))


def registry_for(source: Callable[[], dict]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SvcCollector(source))
    return registry


async def start(port: int, source: Callable[[], dict]) -> asyncio.AbstractServer | SvcError:
    """Listen on 127.0.0.1:`port`; each scrape calls `source()` for the merged snapshot."""
    registry = registry_for(source)

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await _answer(reader, writer, registry)
            await writer.drain()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    try:
        return await asyncio.start_server(serve_one, "127.0.0.1", port, reuse_address=True,
                                          limit=HEAD_LIMIT)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return SvcError("invalid", f"SVC_METRICS_PORT: port {port} is already in use")
        return SvcError("invalid", f"SVC_METRICS_PORT: cannot listen on 127.0.0.1:{port}: "
                                   f"{exc.strerror or exc}")


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                  registry: CollectorRegistry) -> None:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_SECONDS)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return _write(writer, 400, b"text/plain; charset=utf-8", b"malformed request\n")
    method, target = parts[0], parts[1]
    path = target.partition("?")[0]
    if path != "/metrics":
        return _write(writer, 404, b"text/plain; charset=utf-8", b"not found: try /metrics\n")
    if method not in ("GET", "HEAD"):
        return _write(writer, 405, b"text/plain; charset=utf-8", b"method not allowed\n",
                      b"Allow: GET, HEAD\r\n")
    accept = ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "accept":
            accept = value.strip()
    encoder, content_type = choose_encoder(accept)
    body = encoder(registry)
    _write(writer, 200, content_type.encode("latin-1"), body, b"", method == "GET")


_REASONS = {200: b"OK", 400: b"Bad Request", 404: b"Not Found", 405: b"Method Not Allowed"}


def _write(writer: asyncio.StreamWriter, status: int, content_type: bytes, body: bytes,
           extra: bytes = b"", send_body: bool = True) -> None:
    writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s"
                 b"Connection: close\r\n\r\n%s" % (status, _REASONS[status], content_type,
                                                   len(body), extra,
                                                   body if send_body else b""))
