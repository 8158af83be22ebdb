"""`hash_password` and `verify_password`: scrypt, worked out on threads beside the event loop.

A password hash is slow on purpose (about 55 ms, docs/decisions/language.md), so computing it on the
event loop would stall every other request of the server for that long. hashlib's scrypt
releases the GIL while it works, so it runs on a small thread pool instead, and the loop
keeps answering while logins hash. The pool is the runtime's: made at the first call (a
program that never hashes never has one, and no request path pays for it), as many threads
as the process may use cores (more would only queue inside the OS, each holding scrypt's
memory), shut down with the server (`shut_down_pool`) and forgotten in a forked worker,
whose copy has no threads.

A hash names its own parameters, in the format passlib and the PHC string format use for
scrypt, `$scrypt$ln=14,r=8,p=1$<salt>$<digest>` (standard base64 without padding), so the
defaults can grow later and every hash stored before still verifies.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from svc.runtime import services
from svc.runtime.lib.support import SvcError


@dataclass(frozen=True)
class Cost:
    """scrypt's parameters: N = 2**log2_n (CPU and memory), r (block size), p (parallelism)."""
    log2_n: int
    r: int
    p: int

    def memory(self) -> int:
        """The bytes scrypt allocates for these parameters (OpenSSL's own reckoning)."""
        return 128 * self.r * (2 ** self.log2_n + self.p + 2)


#: New hashes: 16 MiB and ~55 ms of one core each on the reference machine (Django's
#: default too; docs/decisions/language.md says why not more).
DEFAULT_COST = Cost(log2_n=14, r=8, p=1)
SALT_BYTES = 16
DIGEST_BYTES = 32
#: scrypt's `maxmem`: a stored hash may ask for up to N = 2**16 at r = 8 (four times the
#: default), and no more, so a hash written by hand or by another system cannot make one verification
#: take gigabytes; each pool thread holds at most this much at a time.
MAX_MEMORY = 65 * 2 ** 20
MAX_PARALLELISM = 16
#: The salt and digest lengths a stored hash may have (RFC 7914's test vectors salt with 4
#: bytes, other tools with up to 64; a digest below 16 bytes would be too easy to hit).
SALT_BYTES_ACCEPTED = range(1, 65)
DIGEST_BYTES_ACCEPTED = range(16, 65)

_HASH_FORMAT = re.compile(
    r"\$scrypt\$ln=([1-9][0-9]?),r=([1-9][0-9]{0,2}),p=([1-9][0-9]?)"
    r"\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


async def hash_password(password: str) -> str:
    """A new hash of `password` with a random salt and the default parameters."""
    salt = secrets.token_bytes(SALT_BYTES)
    digest = await _off_the_loop(password, salt, DEFAULT_COST, DIGEST_BYTES)
    return format_hash(DEFAULT_COST, salt, digest)


async def verify_password(password: str, stored: str) -> bool | SvcError:
    """Whether `password` is the one `stored` was made from, with the parameters `stored`
    names; a `stored` that is not such a hash is an internal error (the server's data is
    wrong, not the client's request), whose message says what is wrong with it."""
    parsed = parse_hash(stored)
    if isinstance(parsed, SvcError):
        return parsed
    cost, salt, expected = parsed
    digest = await _off_the_loop(password, salt, cost, len(expected))
    return hmac.compare_digest(digest, expected)


def format_hash(cost: Cost, salt: bytes, digest: bytes) -> str:
    return (f"$scrypt$ln={cost.log2_n},r={cost.r},p={cost.p}"
            f"${_b64(salt)}${_b64(digest)}")


def parse_hash(stored: str) -> tuple[Cost, bytes, bytes] | SvcError:
    """The parameters, salt and digest of a stored hash, or the error saying why it is not
    one this runtime can verify."""
    found = _HASH_FORMAT.fullmatch(stored)
    if found is None:
        return _malformed("expected $scrypt$ln=<n>,r=<n>,p=<n>$<salt>$<digest>")
    cost = Cost(int(found[1]), int(found[2]), int(found[3]))
    salt, digest = _unb64(found[4]), _unb64(found[5])
    if salt is None or digest is None:
        return _malformed("its salt or digest is not base64")
    if len(salt) not in SALT_BYTES_ACCEPTED or len(digest) not in DIGEST_BYTES_ACCEPTED:
        return _malformed("its salt must be 1 to 64 bytes and its digest 16 to 64")
    if cost.p > MAX_PARALLELISM or cost.memory() > MAX_MEMORY:
        return _malformed(f"its parameters need more than {MAX_MEMORY // 2 ** 20} MiB or "
                          f"p above {MAX_PARALLELISM}")
    return cost, salt, digest


def shut_down_pool() -> None:
    """Let the hashes under way finish, drop the queued ones, stop the threads (server
    shutdown). A later call makes a new pool."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def pool_size() -> int:
    """The cores this process may run on (its affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


async def _off_the_loop(password: str, salt: bytes, cost: Cost, length: int) -> bytes:
    """scrypt on the pool. A request that gives up (its deadline) cancels the awaited
    future, and a hash still queued for it is dropped rather than computed."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_the_pool(), _scrypt, password, salt, cost, length)


def _scrypt(password: str, salt: bytes, cost: Cost, length: int) -> bytes:
    # surrogatepass: a lone surrogate (possible in a str from JSON) hashes, never faults
    return hashlib.scrypt(password.encode("utf-8", "surrogatepass"), salt=salt,
                          n=2 ** cost.log2_n, r=cost.r, p=cost.p, maxmem=MAX_MEMORY,
                          dklen=length)


def _the_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(pool_size(), thread_name_prefix="svc-password")
        return _pool


def _forget_pool_after_fork() -> None:
    """A forked worker inherits the pool object but not its threads: it makes its own."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes | None:
    if len(text) % 4 == 1:
        return None
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        return None


def _malformed(why: str) -> SvcError:
    """The stored text itself is left out: it might be a password stored in the clear."""
    return SvcError("internal", f"not a password hash: {why}")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)

services.join(services.Component("password hashing", at_shutdown=shut_down_pool))
