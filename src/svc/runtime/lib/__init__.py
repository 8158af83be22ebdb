"""What generated code calls: the builtins' run-time side.

    support.py      errors (`SvcError`, `SvcFault`), `Html`, checked integer arithmetic,
                    JSON: the names every generated module may import
    stdlib.py       the standard library: text, lists, numbers, time, randomness, hashing
    maps.py         the builtins on `Map[str, T]` (imported only where a map builtin is used)
    errors.py       the error makers that give an answer more than a status and a reason
    enum_errors.py  the allowed names in a request body's bad enum value (error path only)
    config.py       `config[T]()`: the typed configuration, read once when the program starts
    passwords.py    `hash_password`, `verify_password`: scrypt on threads beside the loop
    uploads.py      `Upload` and its builtins: a request's file, read, hashed, moved off the loop
    live.py         topics and streams: publish, subscribe, receive, server-sent events and
                    WebSocket messages, where svc values become JSON and back
    outbound.py     calling other services: `http_get`, `http_send`, and `http_stub` in tests
    python_calls.py `@python` functions: the boundary, their thread pool, `python_stub`
    assertions.py   `assert_true`, `assert_eq`: the assertions of `svcc test`
    concurrency.py  the runtime test functions: tasks, scopes, actors, a supervisor, a queue

Kept free of server internals where it can be: the code generator targets these names
(docs/internals.md, "Runtime API").
"""
