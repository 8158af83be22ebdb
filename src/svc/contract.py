"""What the compiler and the runtime share: integer ranges, limits, and the route description.

Both sides import from here and nowhere else for these facts, so a limit is stated once: the
checker refuses what the server could not serve, and the generated code describes routes in
the terms the router reads.
"""

from __future__ import annotations

# --- integers ---------------------------------------------------------------------------------

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
I32_MIN = -(2**31)
I32_MAX = 2**31 - 1
INT_RANGES = {"i64": (I64_MIN, I64_MAX), "i32": (I32_MIN, I32_MAX)}

# --- limits -----------------------------------------------------------------------------------

#: Request body, after de-chunking (413 past it).
BODY_LIMIT = 1_048_576
#: Request line plus headers, counted canonically (431 past it).
HEAD_LIMIT = 65_536
#: A WebSocket message after reassembly (close 1009 past it).
MESSAGE_LIMIT = 1_048_576
#: Seconds from complete request headers to the response (504 past it).
PROCESSING_LIMIT = 2.0
#: Default seconds a connection may take to send the next request's headers.
DEFAULT_WAIT_SECONDS = 10
#: Jobs waiting for one database thread.
DB_QUEUE_SIZE = 64
#: Python frames a program may use: svc calls nest this deep before "recursion too deep", and
#: the compiler's passes recurse over deeply nested expressions within it. Python 3.11 runs
#: Python-to-Python calls without growing the C stack, so this is safe.
RECURSION_LIMIT = 10_000
