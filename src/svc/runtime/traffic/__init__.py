"""Traffic policies applied before routing: CORS, rate limits and the gate that applies both.

    gate.py        what svc.toml's `[cors]`, `[rate_limit]`, `[route_limits]` (and guard
                   limits) do to a request before its handler runs
    client.py      the client's address of a request, through `[proxies]`' trusted proxies
    cors.py        CORS decisions, pure functions of the `[cors]` settings and a request
    rate_limit.py  a token bucket per client, in a fixed table every worker shares
"""
