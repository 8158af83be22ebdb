"""The svc runtime: what a compiled program runs on, laid out by what the code does.

    http/           the request path: listening, connections, HTTP/1.1, routing, binding,
                    answers, deadlines, workers, the built-in routes, `test_request`
    traffic/        policies applied before routing: CORS, rate limits, the gate
    observability/  the server's log, access lines, Prometheus metrics, OpenTelemetry traces
    background/     work outside requests: durable jobs, schedules, the service that runs them
    topics/         live fan-out: publish to a topic, subscribe, across workers and instances
    db/             the database builtins on SQLite and PostgreSQL: statements, rows,
                    transactions, migrations
    lib/            what generated code calls: support, the standard library, maps, errors,
                    configuration, passwords, outbound calls, test assertions
    services.py     the optional services of a running program (log, tracer, metrics, gate,
                    background work, outbound sessions) started and stopped in one place, and
                    the lifecycle registry lazily imported modules join

Importing it puts the compiled (mypyc) request-path modules in place when a current build
exists (svc.native, whose `MODULES` lists them); otherwise every module runs as Python.
"""

from svc import native

native.install()
