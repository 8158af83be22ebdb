"""Traffic policies applied before routing: CORS, rate limits and the gate that applies both.

    gate.py        what svc.toml's `[cors]` and `[rate_limit]` (and guard limits) do to a
                   request before it is routed
    cors.py        CORS decisions, pure functions of the `[cors]` settings and a request
    rate_limit.py  a token bucket per client, in a fixed table every worker shares
"""
