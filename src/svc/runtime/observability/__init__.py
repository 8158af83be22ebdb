"""Observability: the server's log (access lines, the program's own lines), Prometheus
metrics and OpenTelemetry traces.
"""
