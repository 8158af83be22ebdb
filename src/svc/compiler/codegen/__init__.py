"""Code generation: a checked program to Python syntax trees, one per `.svc` file.

    generator.py      the module: imports, classes, functions, expressions; `generate`
    statements.py     statements (the module generator hands itself over as `ExpressionGen`)
    builtin_calls.py  builtin calls, as the builtins' records say
    fstrings.py       f-strings
    route_table.py    the entry module's route list, `_svc_ROUTES`
    guard_calls.py    a guarded route's own function: its guards in order, then the handler
    background_table.py  the entry module's job and schedule lists, `_svc_JOBS` and
                      `_svc_SCHEDULES`
    pyast.py          what these share: AST node builders, the position rule, the `_svc_`
                      prefix, field attribute names, an expression's checked type

In: a `CheckedProgram` without diagnostics (program.py), its trees annotated by the checker
(every expression's `type`, every call's `call_kind` and `target`; docs/internals.md lists
what this pass may rely on). Out, from `generator.generate`: `(path, ast.Module)` per `.svc`
file in load order, the entry last; every node carries its `.svc` position, so
`compile(module, path, "exec")` gives tracebacks at the user's lines. A broken annotation
is a compiler bug, raised as `pyast.CodegenError`, never a user's diagnostic.
"""
