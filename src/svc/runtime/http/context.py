"""Per-request context shared by the server and the database layer.

The server sets the loop time at which the current request's processing limit passes; the
database layer reads it so a handler stuck waiting for a full job queue can give up with a
`busy` error (503) instead of being cut off with a timeout. Outside a request it is None.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

_request_deadline: ContextVar[float | None] = ContextVar("svc_request_deadline", default=None)

#: With traces on (svc.runtime.observability.tracing), the OpenTelemetry context of the span the running
#: code belongs to (its request's, its job run's), so a database statement made there becomes
#: that span's child; None otherwise, and never read while tracing is off.
trace_context_var: ContextVar[Any] = ContextVar("svc_trace_context", default=None)


#: The variable itself, for the server's hot path (one C call to set, one to reset).
request_deadline_var = _request_deadline


def request_deadline() -> float | None:
    """Loop time (`loop.time()`) when the current request's processing limit passes, or None."""
    return _request_deadline.get()


def set_request_deadline(deadline: float | None) -> Token:
    """Set the deadline for the current context; returns a token for `reset_request_deadline`."""
    return _request_deadline.set(deadline)


def reset_request_deadline(token: Token) -> None:
    _request_deadline.reset(token)
