"""What a program's functions do outside the database, as far as running a handler again would
repeat it.

    retries.py   which routes the runtime may run again when their transaction clashes with
                 another one (a deadlock, a serialization failure, a lock not released in
                 time): `mark_retried(program)` sets `RouteInfo.retried` and the sentence
                 `svcc check` and the language server show

In: a checked program (its modules annotated by check/). Out: the same program, its routes
marked. It runs after the checks, before code generation.
"""
