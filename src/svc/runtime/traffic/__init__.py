"""Traffic policies applied before routing: CORS, rate limits and the gate that applies both.
"""
