"""Observability: the server's log (access lines, the program's own lines), Prometheus
metrics and OpenTelemetry traces.

    accesslog.py         the request path's part of the log: one call per answered request
                         writes its access line (text or JSON) and counts it (compiled)
    log_lines.py         the rare lines formatted (error details, the program's lines, a
                         schedule's info line, an outbound call's line), time and id given
    serverlog.py         the rest of the log: `SVC_LOG_FORMAT`, error details, `log_info`,
                         `log_warn`, `log_error`, request ids
    metrics.py           what is counted, in plain Python, per process
    metrics_endpoint.py  `GET /metrics` on 127.0.0.1:`SVC_METRICS_PORT` (prometheus_client)
    tracing.py           whether this process exports spans, and the checks of its settings
    otel.py              the OpenTelemetry SDK's side: tracer, exporter, the spans svc makes
                         (imported only when an endpoint is set)
"""
