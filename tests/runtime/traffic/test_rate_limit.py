"""Rate limits (svc.runtime.traffic.rate_limit) with plain values and real processes: the token
bucket's arithmetic, Retry-After's rounding, the table's bounded memory and eviction, one
table shared by forked processes, and svc.toml's `[rate_limit]` checks (svc.rules.traffic)."""

from __future__ import annotations

import os

import pytest

from svc.runtime.traffic.rate_limit import Buckets, retry_after, take
from svc.rules.traffic import RateLimitSettings, rate_limit_problem, rate_limit_settings


def buckets(per_second: float = 2.0, burst: int = 3, clients: int = 64,
            shared: bool = False) -> Buckets:
    return Buckets(RateLimitSettings(per_second, burst, "peer", clients), shared)


def test_a_full_bucket_lets_burst_requests_through_then_says_how_long_to_wait() -> None:
    tokens, stamp = 3.0, 0.0
    for _ in range(3):
        tokens, wait = take(tokens, stamp, 0.0, 2.0, 3)
        assert wait == 0.0
    tokens, wait = take(tokens, stamp, 0.0, 2.0, 3)
    assert tokens == 0.0 and wait == 0.5  # one token at 2/s: half a second
    tokens, wait = take(0.0, 0.0, 0.25, 2.0, 3)  # half a token back
    assert tokens == 0.5 and wait == 0.25
    tokens, wait = take(0.0, 0.0, 100.0, 2.0, 3)  # never above the burst
    assert wait == 0.0 and tokens == 2.0


@pytest.mark.parametrize("wait, seconds", [(0.01, 1), (0.5, 1), (1.0, 1), (1.0001, 2),
                                           (2.5, 3), (10.0, 10)])
def test_retry_after_is_whole_seconds_rounded_up(wait, seconds) -> None:
    assert retry_after(wait) == seconds


def test_clients_have_buckets_of_their_own_that_refill() -> None:
    table = buckets()
    assert [table.admit("10.0.0.1", 100.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert table.admit("10.0.0.1", 100.0) == 0.5
    assert table.admit("10.0.0.2", 100.0) == 0.0  # another client: its own full bucket
    assert table.admit("10.0.0.1", 100.6) == 0.0  # refilled by 0.6 s at 2/s
    assert table.admit("10.0.0.1", 100.6) > 0.0


def test_memory_is_bounded_and_idle_buckets_give_way() -> None:
    table = buckets(clients=16)
    for n in range(1000):
        table.admit(f"10.0.{n // 256}.{n % 256}", 1.0)
    assert table.held() <= 16
    # every slot busy and none idle: a new client evicts the oldest, and is served
    assert table.admit("192.168.1.1", 1.0) == 0.0
    # a client that was limited and then idle long enough is back to a full bucket
    for _ in range(3):
        table.admit("192.168.1.1", 1.0)
    assert table.admit("192.168.1.1", 1.0) > 0.0
    assert [table.admit("192.168.1.1", 3.0) for _ in range(3)] == [0.0, 0.0, 0.0]


def test_forked_processes_share_the_buckets() -> None:
    table = buckets(per_second=0.001, burst=10, shared=True)
    passed = []
    for _ in range(2):  # each child takes 4 of the same client's 10 tokens
        pid = os.fork()
        if pid == 0:
            code = sum(1 for _ in range(4) if table.admit("10.1.1.1", 5.0) == 0.0)
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        passed.append(os.waitstatus_to_exitcode(status))
    assert passed == [4, 4]
    # 8 taken by the children: 2 are left here, then none
    assert [table.admit("10.1.1.1", 5.0) == 0.0 for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize("table, key", [
    ({"requests_per_second": 5.0}, "rate_limit"),
    ({"burst": 5}, "rate_limit"),
    ({"requests_per_second": 0, "burst": 5}, "requests_per_second"),
    ({"requests_per_second": -1.0, "burst": 5}, "requests_per_second"),
    ({"requests_per_second": float("inf"), "burst": 5}, "requests_per_second"),
    ({"requests_per_second": "5", "burst": 5}, "requests_per_second"),
    ({"requests_per_second": True, "burst": 5}, "requests_per_second"),
    ({"requests_per_second": 5, "burst": 0}, "burst"),
    ({"requests_per_second": 5, "burst": 1.0}, "burst"),
    ({"requests_per_second": 5, "burst": 5, "client": "header"}, "client"),
    ({"requests_per_second": 5, "burst": 5, "clients": 8}, "clients"),
    ({"requests_per_second": 5, "burst": 5, "per_user": True}, "per_user"),
])
def test_bad_rate_limit_tables_name_the_key(table, key) -> None:
    found = rate_limit_problem(table)
    assert found is not None and found[0] == key, found
    assert f"'{key}'" in found[1] or key == "rate_limit" and "has no" in found[1]


def test_a_good_table_gives_its_settings() -> None:
    table = {"requests_per_second": 5, "burst": 10, "client": "x-forwarded-for",
             "clients": 1024}
    assert rate_limit_problem(table) is None
    assert rate_limit_settings(table) == RateLimitSettings(5.0, 10, "x-forwarded-for", 1024)
    assert rate_limit_settings({"requests_per_second": 0.5, "burst": 1}) == \
        RateLimitSettings(0.5, 1, "peer", 65536)


def test_guard_limits_key_buckets_by_the_guards_value() -> None:
    import msgspec

    from svc.rules.settings import Settings
    from svc.runtime import services
    from svc.runtime.traffic import gate

    class User(msgspec.Struct):
        id: int
        name: str

    program = services.Services(Settings.from_tables({"guard_limits": {"require_user": {
        "requests_per_second": 0.5, "burst": 2}}}))
    with services.running(program):
        gate.install_guard_limits(program, shared=False)
        ada, bob = User(1, "ada"), User(2, "bob")
        assert [gate.guard_limit("require_user", ada) for _ in range(2)] == [None, None]
        refused = gate.guard_limit("require_user", User(1, "ada"))  # an equal value: same bucket
        assert refused is not None and refused.kind == "too_many_requests"
        assert refused.headers == (("Retry-After", "2"),)  # a token every 2 s
        assert gate.guard_limit("require_user", bob) is None
        assert gate.guard_limit("other_guard", ada) is None  # not limited
    assert gate.guard_limit("require_user", ada) is None  # another program's: no limit


@pytest.mark.parametrize("table, key", [
    ({"f": 5}, "f"),
    ({"f": {"requests_per_second": 1}}, "f"),
    ({"f": {"requests_per_second": 1, "burst": 0}}, "f.burst"),
    ({"f": {"requests_per_second": 1, "burst": 1, "client": "peer"}}, "f.client"),
    ({"f": {"requests_per_second": 1, "burst": 1, "per": 1}}, "f.per"),
    ({"not a name": {"requests_per_second": 1, "burst": 1}}, "not a name"),
])
def test_bad_guard_limits_tables_name_the_key(table, key) -> None:
    from svc.rules.traffic import guard_limits_problem

    found = guard_limits_problem(table)
    assert found is not None and found[0] == key, found
    assert "[guard_limits" in found[1]
    assert guard_limits_problem({"f": {"requests_per_second": 1, "burst": 1,
                                       "clients": 64}}) is None


def test_a_worker_killed_while_holding_the_lock_does_not_stop_the_others() -> None:
    import fcntl
    import signal
    import time

    table = buckets(shared=True)
    assert table.lock is not None
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # takes the lock as admit does, says so, and waits to be killed holding it
        fcntl.lockf(table.lock, fcntl.LOCK_EX)
        os.write(ready_write, b"x")
        time.sleep(60)
        os._exit(0)
    os.read(ready_read, 1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    started = time.monotonic()
    assert table.admit("10.2.2.2", 1.0) == 0.0  # the kernel released the dead holder's lock
    assert time.monotonic() - started < 1.0
    os.close(ready_read)
    os.close(ready_write)


def test_concurrent_workers_never_pass_more_than_the_burst() -> None:
    """Two processes take tokens of one client at the same time: the lock keeps every update
    whole, so together they pass exactly `burst` requests (a lost update would let more
    through)."""
    table = buckets(per_second=1e-6, burst=5000, shared=True)
    read, write = os.pipe()
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            passed = sum(1 for _ in range(10000) if table.admit("10.3.3.3", 7.0) == 0.0)
            os.write(write, passed.to_bytes(4, "little"))
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    counts = [int.from_bytes(os.read(read, 4), "little") for _ in pids]
    os.close(read)
    os.close(write)
    assert sum(counts) == 5000, counts  # without the lock: 5,158 to 8,209 in 5 runs
