"""The request path: listening, connections, the HTTP/1.1 protocol, routing, binding and
answers, deadlines, workers, the built-in routes, and `test_request`'s in-memory connection.
"""
