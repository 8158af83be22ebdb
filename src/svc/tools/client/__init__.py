"""`svcc client --lang ts|js`: a typed TypeScript (or plain JavaScript) client of a program's
HTTP API, one function per route, made from the checked route table as `svcc openapi` reads it
(docs/decisions/tooling.md, "svcc client").

The modules, one concept each: `typescript` maps svc types to TypeScript types and writes the
interfaces; `routes` writes one function per route; `runtime` is the fixed code every client
carries (the fetch call and how an answer becomes a `Result`); `module` puts them together;
`command` is the command line's side.
"""
