"""The phases of a client connection, what its one deadline means in each, and the moves
between them (connection.py moves; this is the map it keeps to).

A connection is always in one `Phase`, and its single `deadline` attribute means what the
phase says (checked by the one `Sweeper` timer, deadlines.py):

    WAITING    until the next request's headers are complete    → close silently
    RECEIVING  headers complete, body still arriving            → 504 and close
               (a body that may pass 1 MiB is paced: a second more per BODY_RATE_MIN bytes)
    HANDLING   a handler is suspended (its Resumer)             → 504, handler cancelled
    STREAMING  /stream is writing (no deadline), or an event stream (events.py) has
               started                                          → a heartbeat if idle
    UPGRADED   a WebSocket: the /ws echo (no deadline), or a program's
               socket (sockets.py)                              → a Ping if idle
    LINGERING  our side is done; drain the peer, then close      → close
    CLOSED     the transport is closed or closing

`Connection.enter(phase, deadline)` is the only place a connection changes phase;
`TRANSITIONS` lists the moves it may make (tests/runtime/http/test_connection.py checks every
move it observes).
"""

from __future__ import annotations

import enum


class Phase(enum.Enum):
    WAITING = "waiting"
    RECEIVING = "receiving"
    HANDLING = "handling"
    STREAMING = "streaming"
    UPGRADED = "upgraded"
    LINGERING = "lingering"
    CLOSED = "closed"


# Module names for the members, compared with `is` on the hot path.
WAITING, RECEIVING, HANDLING = Phase.WAITING, Phase.RECEIVING, Phase.HANDLING
STREAMING, UPGRADED, LINGERING, CLOSED = Phase.STREAMING, Phase.UPGRADED, Phase.LINGERING, Phase.CLOSED

#: phase → the phases it may move to. A response either waits for the next request or
#: lingers; only WAITING starts anything; every phase can end in CLOSED (the peer leaves).
TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    WAITING: frozenset({WAITING, RECEIVING, HANDLING, STREAMING, UPGRADED, LINGERING, CLOSED}),
    RECEIVING: frozenset({WAITING, HANDLING, STREAMING, LINGERING, CLOSED}),
    HANDLING: frozenset({WAITING, STREAMING, UPGRADED, LINGERING, CLOSED}),
    STREAMING: frozenset({WAITING, LINGERING, CLOSED}),
    UPGRADED: frozenset({LINGERING, CLOSED}),
    LINGERING: frozenset({LINGERING, CLOSED}),
    CLOSED: frozenset(),
}
