"""The rules under both the compiler and the runtime: what a program may say is checked by the
compiler and applied by the runtime with the same code (integer ranges, limits and the route
description, regular expressions, outbound calls, svc.toml's traffic tables, typed
configuration values). Nothing here imports the compiler or the runtime.
"""
