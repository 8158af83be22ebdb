"""What generated code calls: the builtins' run-time side (support, the standard library,
maps, errors, configuration, passwords, outbound calls, the test assertions and the
concurrency test functions).
"""
