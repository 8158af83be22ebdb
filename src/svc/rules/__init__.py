"""The rules under both the compiler and the runtime: what a program may say is checked by the
compiler and applied by the runtime with the same code, so the two cannot disagree.

    contract.py        integer ranges, limits, statuses and header fields, the route, job and
                       schedule descriptions generated code hands the runtime
    patterns.py        regular expressions: the one dialect (RE2's) the checker checks and the
                       runtime runs
    field_rules.py     field rules (`@length`, `@range`, `@pattern`, `@one_of`): the tests and
                       messages the compiler's checks, the runtime and `svcc openapi` share
    field_checks.py    the field rules of a decoded request body or `json_decode[T]` value,
                       every failure named by its path (binding and support share it)
    outbound_calls.py  an outbound call's method and URL (`http_get`, `http_send`, `http_stub`):
                       a literal that breaks them is a compile error, a computed one a fault
    traffic.py         svc.toml's `[cors]` and `[rate_limit]` tables: their keys, their checks
                       and the plain settings the gate is built with
    topic_names.py     what may name a topic: a `topic("name")` literal is checked with the
                       rule the topics service applies
    config_values.py   typed configuration: the rules `config[T]()` reads values by (the
                       compiler checks `[config]` with them, the runtime reads the environment)
    settings.py        svc.toml's tables as one frozen Settings value built by project.py,
                       emitted once by code generation and passed to serve, test_request,
                       run_jobs and the runner
    sql_text.py        SQL text read without parsing it: placeholders, statements, quotes
    sql_params.py      how each kind of value is sent to a database (PostgreSQL's casts), for
                       the runtime and the SQL checker alike

Nothing here imports the compiler or the runtime; both import from here.
"""
