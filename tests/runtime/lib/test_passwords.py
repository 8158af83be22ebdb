"""hash_password / verify_password (svc.runtime.lib.passwords): the hash format, verification with
the parameters a hash names, the refusals of stored texts that are not such hashes, and the
thread pool the work runs on. The end-to-end test (a server answering /health while logins
hash) is tests/e2e/test_password_logins.py."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
import time

import pytest

from svc.runtime.lib import passwords
from svc.runtime.lib.passwords import Cost, format_hash, hash_password, parse_hash, verify_password
from svc.runtime.lib.support import SvcError

HASH = re.compile(r"\$scrypt\$ln=14,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}")


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_hash_names_its_parameters_salt_and_digest():
    stored = run(hash_password("correct horse"))
    assert HASH.fullmatch(stored), stored
    assert len(stored) == 88


def test_a_hash_verifies_and_a_wrong_password_does_not():
    stored = run(hash_password("correct horse"))
    assert run(verify_password("correct horse", stored)) is True
    assert run(verify_password("correct horse ", stored)) is False
    assert run(verify_password("Correct horse", stored)) is False
    assert run(verify_password("", stored)) is False


def test_two_hashes_of_one_password_differ_by_their_salt():
    first, second = run(hash_password("pw")), run(hash_password("pw"))
    assert first != second
    assert first.split("$")[4] != second.split("$")[4]
    assert run(verify_password("pw", first)) and run(verify_password("pw", second))


def test_a_hash_made_with_other_parameters_still_verifies():
    # RFC 7914, section 12: scrypt("password", "NaCl", N=1024, r=8, p=16, dkLen=64)
    digest = bytes.fromhex(
        "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
        "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640")
    stored = format_hash(Cost(log2_n=10, r=8, p=16), b"NaCl", digest)
    assert stored.startswith("$scrypt$ln=10,r=8,p=16$TmFDbA$")
    assert run(verify_password("password", stored)) is True
    assert run(verify_password("passw0rd", stored)) is False


def test_weaker_parameters_verify_and_base64_padding_is_refused():
    salt = b"0123456789abcdef"
    digest = hashlib.scrypt(b"pw", salt=salt, n=2 ** 4, r=1, p=1, dklen=32)
    assert run(verify_password("pw", format_hash(Cost(4, 1, 1), salt, digest))) is True
    padded = format_hash(Cost(4, 1, 1), salt, digest) + "="
    assert isinstance(run(verify_password("pw", padded)), SvcError)


def test_any_str_hashes_the_empty_one_and_lone_surrogates_included():
    for password in ("", "zoë 🔑", "\ud800", "a\x00b", "x" * 100_000):
        stored = run(hash_password(password))
        assert run(verify_password(password, stored)) is True
    assert run(verify_password("", run(hash_password("x")))) is False
    assert run(verify_password("a", run(hash_password("a\x00b")))) is False


MALFORMED = [
    ("", "expected $scrypt$"),
    ("hunter2", "expected $scrypt$"),
    ("5f4dcc3b5aa765d61d8327deb882cf99", "expected $scrypt$"),
    ("$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW", "expected $scrypt$"),
    ("$scrypt$ln=15,r=8,p=1$c2FsdHNhbHQ", "expected $scrypt$"),  # no digest
    ("$scrypt$ln=15,r=8$c2FsdHNhbHQ$" + "A" * 43, "expected $scrypt$"),  # no p
    ("$scrypt$r=8,ln=15,p=1$c2FsdHNhbHQ$" + "A" * 43, "expected $scrypt$"),  # order
    ("$scrypt$ln=015,r=8,p=1$c2FsdHNhbHQ$" + "A" * 43, "expected $scrypt$"),  # leading zero
    ("$scrypt$ln=0,r=8,p=1$c2FsdHNhbHQ$" + "A" * 43, "expected $scrypt$"),  # N = 1
    ("$scrypt$ln=15,r=8,p=1$c2FsdHNhbHQ$" + "A" * 43 + "\n", "expected $scrypt$"),
    ("$scrypt$ln=15,r=8,p=1$c2FsdHNhbHQ$" + "A" * 41, "not base64"),  # 41 chars: 4k+1
    ("$scrypt$ln=15,r=8,p=1$c2FsdHNhbHQ$" + "A" * 20, "digest 16 to 64"),  # 15 bytes
    ("$scrypt$ln=15,r=8,p=1$" + "A" * 90 + "$" + "A" * 43, "salt must be 1 to 64"),
    ("$scrypt$ln=17,r=8,p=1$c2FsdHNhbHQ$" + "A" * 43, "more than 65 MiB"),  # 128 MiB
    ("$scrypt$ln=99,r=8,p=1$c2FsdHNhbHQ$" + "A" * 43, "more than 65 MiB"),
    ("$scrypt$ln=10,r=8,p=17$c2FsdHNhbHQ$" + "A" * 43, "p above 16"),
]


@pytest.mark.parametrize("stored,why", MALFORMED, ids=[str(i) for i in range(len(MALFORMED))])
def test_a_stored_text_that_is_not_a_hash_is_an_internal_error_saying_why(stored, why):
    started = time.perf_counter()
    result = run(verify_password("pw", stored))
    assert isinstance(result, SvcError), result
    assert result.kind == "internal"
    assert result.message.startswith("not a password hash: ") and why in result.message
    assert time.perf_counter() - started < 1.0  # refused before any scrypt work


def test_the_error_never_shows_the_stored_text():
    secret = "my-cleartext-password-in-the-hash-column"
    result = run(verify_password("pw", secret))
    assert isinstance(result, SvcError) and secret not in result.message
    assert "cleartext" not in result.message


def test_parse_hash_reads_what_format_hash_writes():
    cost, salt, digest = Cost(12, 4, 2), b"\x00\xff" * 8, bytes(range(32))
    assert parse_hash(format_hash(cost, salt, digest)) == (cost, salt, digest)


def test_the_default_cost_fits_the_memory_bound_and_a_doubled_one_still_does():
    assert passwords.DEFAULT_COST.memory() <= passwords.MAX_MEMORY
    assert Cost(16, 8, 1).memory() <= passwords.MAX_MEMORY < Cost(17, 8, 1).memory()


def test_the_work_runs_on_the_pool_threads_and_the_loop_keeps_turning():
    """While four hashes run, the loop's own 5 ms timer keeps firing on time."""
    async def scenario() -> tuple[float, int]:
        loop = asyncio.get_running_loop()
        hashes = asyncio.gather(*(hash_password(f"pw{i}") for i in range(4)))
        worst, ticks = 0.0, 0
        while not hashes.done():
            before = loop.time()
            await asyncio.sleep(0.005)
            worst = max(worst, loop.time() - before)
            ticks += 1
        await hashes
        return worst, ticks

    worst, ticks = run(scenario())
    assert ticks >= 10
    assert worst < 0.05, f"the loop stalled {worst * 1000:.0f} ms"
    names = {t.name for t in threading.enumerate()}
    assert any(name.startswith("svc-password") for name in names)


def test_the_pool_has_one_thread_per_core_and_is_made_again_after_shut_down():
    run(hash_password("pw"))
    pool = passwords._pool
    assert pool is not None and pool._max_workers == passwords.pool_size()
    passwords.shut_down_pool()
    assert passwords._pool is None
    assert not any(t.name.startswith("svc-password") and t.is_alive()
                   for t in threading.enumerate())
    passwords.shut_down_pool()  # twice is harmless
    stored = run(hash_password("again"))
    assert run(verify_password("again", stored)) is True
    assert passwords._pool is not None and passwords._pool is not pool
    passwords.shut_down_pool()


def test_a_cancelled_call_drops_its_queued_hash():
    """A request that gives up (its deadline cancels the handler) leaves no work behind: the
    hashes queued behind busy threads are dropped, so a later call does not wait for them."""
    async def scenario() -> tuple[float, float]:
        stored = format_hash(Cost(16, 8, 1), b"s" * 16, b"d" * 32)  # ~0.2 s each
        started = time.perf_counter()  # one round of the pool, on this machine, now
        await asyncio.gather(*[verify_password("pw", stored) for _ in range(passwords.pool_size())])
        one_round = time.perf_counter() - started
        busy = [asyncio.ensure_future(verify_password("pw", stored))
                for _ in range(passwords.pool_size())]
        queued = [asyncio.ensure_future(verify_password("pw", stored))
                  for _ in range(10 * passwords.pool_size())]
        await asyncio.sleep(0.01)
        for call in queued:
            call.cancel()
        started = time.perf_counter()
        await hash_password("after")
        elapsed = time.perf_counter() - started
        await asyncio.gather(*busy)
        return elapsed, one_round

    # Kept, the queued hashes would make the new call wait 11 rounds of the pool; dropped, it
    # waits for the busy round only (and its own, cheaper hash). A ratio, not seconds: the
    # machine may be busy with other work.
    elapsed, one_round = run(scenario())
    assert elapsed < 4 * one_round, (elapsed, one_round)
