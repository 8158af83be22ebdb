"""`db_migrate`: bring a database's schema up to date with the program's list of steps.

Each step is SQL text (often `include_text("migrations/001_tasks.sql")`), possibly several
statements. The steps applied to a database are recorded in `svc_migrations` (number, the
SHA-256 of the text, when), so each is applied once, in order, each in its own transaction
together with its record. The list may only grow at its end: a database with more steps
recorded than the list holds, or whose recorded text differs from the list's, is an error
naming the step, and nothing is applied.

Two processes migrating one database at once apply each step once, by a lock held for each
step's transaction: SQLite's write lock (`BEGIN IMMEDIATE`), PostgreSQL's
`pg_advisory_xact_lock`. Whoever gets the lock second reads the records again and finds the
step done.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from datetime import datetime, timezone

from svc.runtime.db.base import ALL, COMMIT, EXEC, ROLLBACK, SCRIPT, Db, Tx
from svc.runtime.db.lock_waits import WAIT_FOREVER
from svc.runtime.db.transactions import refuse_if_held
from svc.runtime.lib.support import SvcError

_TABLE = ("CREATE TABLE IF NOT EXISTS svc_migrations (step BIGINT PRIMARY KEY, "
          "hash TEXT NOT NULL, applied_at TEXT NOT NULL)")
#: The advisory lock key of migrations on PostgreSQL (any fixed 64-bit number; "svcmigr").
_PG_LOCK_KEY = 0x7376636D69677200
#: How long a migration waits for another process's migration (SQLite's lock) in all.
_LOCK_PATIENCE_SECONDS = 60.0


class _Applied:
    """A row of svc_migrations (the row mapper fills classes by their `__svc_fields__`)."""

    __svc_fields__ = (("step", "i64", False), ("hash", "str", False))

    def __init__(self, step: int, hash: str) -> None:  # noqa: A002 - the column's name
        self.step = step
        self.hash = hash


def step_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def db_migrate(db: Db, steps: list[str]) -> int | SvcError:
    """Apply, in order, the steps not yet applied; how many it applied."""
    held = refuse_if_held(db)  # its own transaction would wait for the caller's
    if held is not None:
        return held
    hashes = [step_hash(step) for step in steps]
    applied = 0
    while True:
        tx = await begin_locked(db, _PG_LOCK_KEY)
        if isinstance(tx, SvcError):
            return tx
        outcome = await _next_step(tx, steps, hashes)
        if outcome is None or isinstance(outcome, SvcError):
            await tx._end(ROLLBACK)
            return applied if outcome is None else outcome
        done = await tx._end(COMMIT)
        if isinstance(done, SvcError):
            return _failed(outcome, done)
        applied += 1


async def db_migrate_declared(db: Db, declared: dict[str, tuple[str, ...]]) -> int | SvcError:
    """`db_migrate(db)`: the steps svc.toml's `[migrations]` declares for the database's
    dialect (their texts embedded by the compiler, which checked the program's SQL against
    them)."""
    steps = declared.get(db.dialect)
    if steps is None:
        named = " and ".join(declared) or "no database"
        return SvcError("database", f"this program declares migrations for {named} only "
                                    f"(svc.toml [migrations]), not for {db.dialect}")
    return await db_migrate(db, list(steps))


async def begin_locked(db: Db, pg_lock_key: int) -> Tx | SvcError:
    """A transaction holding a lock that serializes it with other processes (waiting for
    theirs): SQLite's write lock, or on PostgreSQL the advisory lock `pg_lock_key`. Migrations
    take it; so does making the job tables (svc.runtime.background.job_store)."""
    give_up = time.monotonic() + _LOCK_PATIENCE_SECONDS
    while True:
        tx = await db._begin()
        if not isinstance(tx, SvcError):
            break
        if "locked" not in tx.message or time.monotonic() > give_up:
            return tx
        await asyncio.sleep(0.05)  # SQLite: another process holds the write lock
    if db.dialect == "postgresql":
        # as long as the other process's migration takes (lock_waits.py bounds other waits)
        locked = await tx._submit(EXEC, WAIT_FOREVER, (), None)
        if not isinstance(locked, SvcError):
            locked = await tx._submit(EXEC, "SELECT pg_advisory_xact_lock(?1)", (pg_lock_key,),
                                      None)
        if isinstance(locked, SvcError):
            await tx._end(ROLLBACK)
            return locked
    return tx


async def _next_step(tx: Tx, steps: list[str], hashes: list[str]) -> int | None | SvcError:
    """Check the records against the list and apply the first step not applied.

    Returns its number (1-based), None when every step is applied, or the error.
    """
    made = await tx._submit(EXEC, _TABLE, (), None)
    if isinstance(made, SvcError):
        return made
    rows = await tx._submit(ALL, "SELECT step, hash FROM svc_migrations ORDER BY step", (),
                            _Applied)
    if isinstance(rows, SvcError):
        return rows
    mismatch = _disagreement(rows, hashes)
    if mismatch is not None:
        return SvcError("database", mismatch)
    number = len(rows) + 1
    if number > len(steps):
        return None
    result = await tx._submit(SCRIPT, steps[number - 1], (), None)
    if isinstance(result, SvcError):
        return _failed(number, result)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    recorded = await tx._submit(
        EXEC, "INSERT INTO svc_migrations (step, hash, applied_at) VALUES (?1, ?2, ?3)",
        (number, hashes[number - 1], now), None)
    return _failed(number, recorded) if isinstance(recorded, SvcError) else number


def _disagreement(rows: list, hashes: list[str]) -> str | None:
    """Why the recorded steps do not fit the list (naming the step), or None."""
    for position, row in enumerate(rows, start=1):
        if row.step != position:
            return (f"migration records are not numbered 1 to {len(rows)} (step {position} "
                    f"is recorded as {row.step}); svc_migrations was edited by hand")
        if position > len(hashes):
            return (f"migration step {position} is applied to this database but the list "
                    f"holds {len(hashes)} steps; a program older than its database?")
        if row.hash != hashes[position - 1]:
            return (f"migration step {position} differs from the step applied to this "
                    f"database (recorded sha256 {row.hash[:12]}…, the list's "
                    f"{hashes[position - 1][:12]}…); add a new step instead of editing one "
                    "that was applied")
    return None


def _failed(number: int, error: SvcError) -> SvcError:
    return SvcError(error.kind, f"migration step {number} failed: {error.message}")
