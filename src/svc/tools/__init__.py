"""The commands beside `check`, `run` and `build`: each over the pipeline, none in the request path.

    asyncapi.py         `svcc asyncapi`: the AsyncAPI 3.0 description of a program's event
                        streams, WebSockets and topics
    client/             `svcc client --lang ts|js`: a typed client of a program's HTTP API
    fmt.py              `svcc fmt`: files rewritten in the canonical layout, or `--check`
    lsp.py              `svcc lsp`: the language server over stdio (pygls)
    lsp_analysis.py     which program an editor's file belongs to, checked with unsaved texts
    lsp_index.py        what an editor asks of a checked program: definitions, hover,
                        completion, symbols
    openapi.py          `svcc openapi`: the OpenAPI 3.1 description of a program's routes
    openapi_schemas.py  the JSON Schemas of svc types and classes, for both documents
    openapi_security.py the security schemes: which guards are authentication
    output.py           a checked program's text printed or written to a file (openapi,
                        asyncapi, client), and the atomic write `fmt` uses too
    routes.py           `svcc routes`: the route table as the server serves it
    sql_against.py      `svcc check --against REV`: an older version's SQL, new migrations
    test_runner.py      `svcc test`: the `test_*` functions of a program's `*_test.svc` files
    watch.py            `svcc run --watch`: serve again each time a file changes
    vscode_grammar.py   the VS Code grammar's builtin names, made from the builtins' records
"""
