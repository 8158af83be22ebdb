"""The request path: listening, connections, the HTTP/1.1 protocol, routing, binding and
answers, deadlines, workers, the built-in routes, and `test_request`'s in-memory connection.

    server.py          `serve`: listening, the services around it, graceful shutdown
    workers.py         `SVC_WORKERS=N`: `serve` in N worker processes on the one port
    connection.py      one client connection: bytes in, requests answered in order, deadlines
    phases.py          a connection's phases, what its deadline means in each, the moves allowed
    protocol.py        the HTTP/1.1 state machine: bytes in, events out, no sockets
    head.py            a `Request`, and the fast path that reads one whole in one compiled pass
    routing.py         the route table: a request's method and path to its route
    binding.py         a request's captures, query, body and database into a handler's arguments
    uploads.py         an upload route's body received into temporary files (multipart or raw)
    events.py          server-sent events: the stream an `Events[T]` handler sends events on
    sockets.py         a program's WebSocket: the socket a `WebSocket[In, Out]` handler holds
    answers.py         how each route is answered, one strategy object chosen at start-up
    eager.py           a handler's first step run at once, resumed without a Task if it suspends
    retries.py         a handler run again after its transaction clashed with another one
    responses.py       answers as bytes: status lines, framing, error, JSON and HTML bodies
    headers.py         a request's header fields as svc code sees them (`Headers`, `header`)
    custom_response.py `Response[T]`: an answer with the status and fields its handler chose
    deadlines.py       every connection's deadlines, checked by one periodic sweep
    watchdog.py        interrupts a handler that computes without ever awaiting
    context.py         per-request context the database layer reads (deadline, trace context)
    builtin_routes.py  the reserved routes: GET /health, /ready, /stream and /ws
    websocket.py       WebSocket framing (RFC 6455, websockets' sans-I/O protocol), the `/ws` echo
    test_client.py     `headers_of`, `test_request` and reading a `Response[T]` in svc tests

svc.native.MODULES says which of these are compiled with mypyc.
"""
