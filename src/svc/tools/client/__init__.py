"""`svcc client --lang ts|js`: a typed TypeScript (or plain JavaScript) client of a program's
HTTP API, one function per route, made from the checked route table as `svcc openapi` reads it
(docs/decisions/tooling.md, "svcc client").

    typescript.py   svc types as TypeScript types, and the interfaces of the classes
    routes.py       one function per route, and each route's union of errors
    runtime.py      the fixed code every client carries: the fetch call, answers as `Result`s
    module.py       the whole client, put together (types only for TypeScript)
    command.py      the command line's side: check, then print or write atomically
"""
