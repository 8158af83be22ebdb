"""The checker: syntax trees to a checked program, or the reasons it is not one.

    checker.py      the program as a whole: definitions, what each file sees, declared types,
                    `main`; then each function body
    context.py      `CheckContext`: the tables and services the body checker gets
    expressions.py  a body's scopes and the types of its expressions
    calls.py        calls (functions, constructors, builtins) and `await`
    db_types.py     the types that cross into a database: db_exec/db_all/db_one's arguments
                    and what db_all[T]/db_one[T] read (a class, or one column)
    includes.py     what `include_text` may read: a regular file inside the program's folder,
                    of at most 8 MiB
    body.py         a body's statements and that it returns on every path
    http_types.py   the rules of the HTTP types (`Headers`, `Response[T]`) and their builtins,
                    and of the test client's literal arguments
    live_types.py   topics and streams (`Topic[T]`, `Subscription[T]`, `Events[T]`,
                    `WebSocket[In, Out]`): topic constants, what may hold them, their builtins
    constants.py    module-level constants (literal-built values) and enums
    some.py         `Some(x)` as an expression
    maps.py         `Map[str, T]`: the written type and the empty map
    field_rules.py  `@length`, `@range`, `@pattern` and `@one_of` above a class's fields
    generics.py     generic classes `class Page[T]:` and their instantiations
    regex_patterns.py  the regular-expression builtins' patterns (literals RE2 accepts)
    routes.py       the route table and its rules
    guards.py       `@guard(f)` and `guard("/prefix", f)`: the guard functions' rules, each
                    route's guards in order and where their values go (routes.py asks)
    error_kinds.py  which error kinds a function can return (for `svcc openapi`)
    background.py   `@job`, `@every` and `@cron`: the rules of functions run outside requests
    python_functions.py  `@python("module", "function")` declarations: their types, their
                    error kind, and the module and function imported at compile time
    config_class.py  the classes `config[T]()` reads, and svc.toml's `[config]` table checked
                    against them (the values' rules are svc.rules.config_values)

In: the modules from the front end, in load order, and the entry file's path. Out, from
`checker.check`: a `CheckedProgram` (program.py: the classes and functions with their
resolved types, `main`, the references editors follow) with every expression and call in the
trees annotated in place, and the diagnostics, sorted by position; then `routes.build_routes`
gives the route table and its diagnostics. Code generation runs only on a program without
diagnostics.
"""
