"""Rate limits: a token bucket per client, in a fixed table that every worker shares.

A client's bucket holds up to `burst` tokens and gains `per_second` tokens a second; a request
takes one, and a request that finds less than one is answered 429 with `Retry-After`: the
seconds, rounded up, until a token is there again. `take` is a pure function of the bucket's
state and the time; `Buckets` keeps the states.

Shared across `SVC_WORKERS`: the workers listen on one SO_REUSEPORT group, where the kernel
picks a worker by a hash of the connection's address *and port*, so one client's connections
land on every worker. Buckets per worker would let a client through `workers` times its
limit (or, divided by the workers, hold a client on one keep-alive connection to a fraction
of it). So the table lives in one anonymous shared memory map made before the workers are
forked, and a POSIX record lock (`fcntl.lockf` on an unlinked file) guards each update; a
single server (no workers) takes no lock. A record lock, not a semaphore: the kernel releases
it when its holder dies, so a worker killed mid-update (SIGKILL, the OOM killer) cannot leave
the others waiting forever.

Bounded memory: the table has `clients` slots of 24 bytes (a key hash, tokens, the time
of the last update), fixed at start. A client's slot is found by its key's hash among
`PROBES` neighbours; when all are taken, the bucket idle longest gives way. A bucket that has
been idle long enough to be full again is the same as no bucket, so nothing is lost when it
is evicted; only under more distinct clients than slots does a client start over full.
"""

from __future__ import annotations

import fcntl
import math
import mmap
import struct
import tempfile
from typing import IO

from svc.rules.traffic import RateLimitSettings

#: One slot: the key's hash (0: free), the tokens left, the monotonic time of the last update.
SLOT = struct.Struct("<Qdd")
#: Neighbouring slots a key may occupy.
PROBES = 8


def take(tokens: float, stamp: float, now: float, per_second: float,
         burst: int) -> tuple[float, float]:
    """One request against a bucket holding `tokens` at time `stamp`: `(tokens left, 0.0)` when
    it may pass, else `(tokens now, seconds until the next token)`."""
    tokens = min(float(burst), tokens + max(0.0, now - stamp) * per_second)
    if tokens >= 1.0:
        return tokens - 1.0, 0.0
    return tokens, (1.0 - tokens) / per_second


def retry_after(wait: float) -> int:
    """`Retry-After` in whole seconds: rounded up, at least 1."""
    return max(1, math.ceil(wait - 1e-9))


class Buckets:
    """The token buckets of one server (all its workers), in a shared map of fixed size."""

    def __init__(self, settings: RateLimitSettings, shared: bool) -> None:
        self.per_second = settings.per_second
        self.burst = settings.burst
        self.slots = settings.clients
        #: seconds an untouched bucket takes to be full again (then it can be dropped)
        self.refill = settings.burst / settings.per_second
        self.memory = mmap.mmap(-1, self.slots * SLOT.size)  # MAP_SHARED: survives fork
        #: the lock's file (its descriptor is inherited by the workers), None unshared
        self.lock: IO[bytes] | None = tempfile.TemporaryFile() if shared else None

    def admit(self, key: str, now: float) -> float:
        """Take a token for `key` at monotonic time `now`: 0.0 when the request may pass, else
        the seconds until it could."""
        lock = self.lock
        if lock is None:
            return self._admit(key, now)
        fcntl.lockf(lock, fcntl.LOCK_EX)
        try:
            return self._admit(key, now)
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)

    def _admit(self, key: str, now: float) -> float:
        code = (hash(key) & 0xFFFF_FFFF_FFFF_FFFF) or 1  # workers share the hash seed (fork)
        index = code % self.slots
        held, tokens, stamp = SLOT.unpack_from(self.memory, index * SLOT.size)
        if held != code:  # not in its first slot: in a neighbour, or new
            index, tokens, stamp = self._place(code, index, now)
        left, wait = take(tokens, stamp, now, self.per_second, self.burst)
        SLOT.pack_into(self.memory, index * SLOT.size, code, left, now)
        return wait

    def _place(self, code: int, start: int, now: float) -> tuple[int, float, float]:
        """(slot, tokens, time) of the bucket of `code` among the `PROBES` slots from `start`;
        not there, a full new bucket in the first free slot, or the first whose bucket is as
        good as full, or else the one idle longest."""
        memory, size, slots = self.memory, SLOT.size, self.slots
        chosen, oldest = -1, math.inf
        for probe in range(PROBES):
            index = (start + probe) % slots
            held, tokens, stamp = SLOT.unpack_from(memory, index * size)
            if held == code:
                return index, tokens, stamp
            if held == 0 or now - stamp >= self.refill:  # free, or as good as free
                if oldest != -math.inf:
                    chosen, oldest = index, -math.inf
            elif stamp < oldest:
                chosen, oldest = index, stamp
        return chosen, float(self.burst), now

    def held(self) -> int:
        """Slots in use (for tests)."""
        size = SLOT.size
        return sum(1 for index in range(self.slots)
                   if SLOT.unpack_from(self.memory, index * size)[0] != 0)
