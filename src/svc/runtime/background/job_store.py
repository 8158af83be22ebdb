"""The rows behind durable jobs and schedules: the tables and every statement on them, for
SQLite and PostgreSQL (docs/reference/language.md, "Jobs and schedules").

`svc_jobs` holds one row per job: `queued` (waiting for `run_at`), `running` (claimed by
`locked_by` until `locked_until`), `done`, or `dead` (its attempts used up: the dead-letter
state, kept until someone deletes it). `svc_schedules` holds one row per scheduled function:
when it is next due, and the lease of the process running it now.

A claim is one statement, so two runners never claim one job: on PostgreSQL the candidate
rows are locked with `FOR UPDATE SKIP LOCKED` (a runner skips the rows another is claiming,
as Oban and River do); on SQLite the one writer at a time is the database's own rule. Times
are milliseconds since the epoch (UTC) as BIGINT, the same on both databases. A finishing
statement names the runner (`locked_by`), so a runner that lost its claim (its lease ran
out and another runner rescued the job) changes nothing.

The tables carry a version, kept in `svc_internal_schema` (one row per internal table), and
bring themselves up to date: `create_tables` applies the steps a table misses, in order, under
a lock that serializes it with every other process on the database. A table made by release 0.3
(present, no version recorded) is at version 1. A database whose tables are newer than this
svc knows is refused: an older svc must not write rows whose meaning it does not know.
"""

from __future__ import annotations

import time
import weakref

from svc.rules.settings import JobSettings
from svc.runtime.db.base import ALL, COMMIT, EXEC, ROLLBACK, SCRIPT, Db, Tx
from svc.runtime.db.migrations import begin_locked
from svc.runtime.lib.support import SvcError

#: Done jobs are kept this long (to see what ran), then deleted; dead ones are kept.
KEEP_DONE_MS = 24 * 3_600_000
#: The key of the PostgreSQL advisory lock taken while the tables are made.
_PG_LOCK_KEY = 0x7376636A6F627300

#: Version 1 of each internal table, as release 0.3 made them.
_JOBS_V1 = {
    "sqlite": """
CREATE TABLE svc_jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'dead')),
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  deadline_ms INTEGER NOT NULL,
  run_at INTEGER NOT NULL,
  locked_by TEXT,
  locked_until INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX svc_jobs_due ON svc_jobs (state, run_at);
""",
    "postgresql": """
CREATE TABLE svc_jobs (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'dead')),
  attempt INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  deadline_ms BIGINT NOT NULL,
  run_at BIGINT NOT NULL,
  locked_by TEXT,
  locked_until BIGINT,
  last_error TEXT,
  created_at BIGINT NOT NULL,
  finished_at BIGINT
);
CREATE INDEX svc_jobs_due ON svc_jobs (state, run_at);
""",
}
_SCHEDULES_V1 = {
    "sqlite": """
CREATE TABLE svc_schedules (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  next_run_at INTEGER NOT NULL,
  locked_by TEXT,
  locked_until INTEGER
);
""",
    "postgresql": """
CREATE TABLE svc_schedules (
  name TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  next_run_at BIGINT NOT NULL,
  locked_by TEXT,
  locked_until BIGINT
);
""",
}

#: The steps of each internal table, oldest first: after step n (each SQL text by dialect) the
#: table is at version n. Steps are only ever appended, and a later step keeps the rows an
#: older svc wrote (a job queued before an upgrade still runs after it).
STEPS: dict[str, list[dict[str, str]]] = {
    "svc_jobs": [_JOBS_V1],
    "svc_schedules": [_SCHEDULES_V1],
}

#: Where the versions are recorded. Its own shape never changes (so it needs no version).
_VERSIONS = ("CREATE TABLE IF NOT EXISTS svc_internal_schema (name TEXT PRIMARY KEY, "
             "version BIGINT NOT NULL)")
_READ_VERSIONS = "SELECT name, version FROM svc_internal_schema"
_RECORD_VERSION = ("INSERT INTO svc_internal_schema (name, version) VALUES (?1, ?2) "
                   "ON CONFLICT (name) DO UPDATE SET version = excluded.version")
#: Whether a table is there (one made by release 0.3 has no recorded version): 1 or 0.
_TABLE_EXISTS = {
    "sqlite": "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?1",
    # the table the statements would find, through the search path, as they do
    "postgresql": "SELECT COUNT(to_regclass(?1)) AS n",
}

_INSERT = ("INSERT INTO svc_jobs (name, payload, max_attempts, deadline_ms, run_at, created_at) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?5) RETURNING id")

# ?1 the runner, ?2 now, ?3 the lease's grace, ?4 how many; the job names are inlined (they
# are the program's, checked by the compiler: letters, digits, '_', '.', '-').
_CLAIM = {
    "sqlite": """UPDATE svc_jobs SET state = 'running', attempt = attempt + 1, locked_by = ?1,
  locked_until = ?2 + deadline_ms + ?3
WHERE id IN (SELECT id FROM svc_jobs WHERE state = 'queued' AND run_at <= ?2
             AND name IN ({names}) ORDER BY run_at, id LIMIT ?4)
RETURNING id, name, payload, attempt, max_attempts, deadline_ms""",
    "postgresql": """WITH picked AS (
  SELECT id FROM svc_jobs WHERE state = 'queued' AND run_at <= ?2 AND name IN ({names})
  ORDER BY run_at, id LIMIT ?4 FOR UPDATE SKIP LOCKED)
UPDATE svc_jobs AS j SET state = 'running', attempt = j.attempt + 1, locked_by = ?1,
  locked_until = ?2 + j.deadline_ms + ?3
FROM picked WHERE j.id = picked.id
RETURNING j.id, j.name, j.payload, j.attempt, j.max_attempts, j.deadline_ms""",
}

#: `run_jobs_now`: the queued jobs waiting for a later attempt are due now (?1); the job names
#: are inlined as in _CLAIM.
_DUE_NOW = ("UPDATE svc_jobs SET run_at = ?1 WHERE state = 'queued' AND run_at > ?1 "
            "AND name IN ({names})")

_DONE = ("UPDATE svc_jobs SET state = 'done', finished_at = ?3, locked_by = NULL, "
         "locked_until = NULL WHERE id = ?1 AND locked_by = ?2")
_RETRY = ("UPDATE svc_jobs SET state = 'queued', run_at = ?3, last_error = ?4, locked_by = NULL, "
          "locked_until = NULL WHERE id = ?1 AND locked_by = ?2")
_DEAD = ("UPDATE svc_jobs SET state = 'dead', finished_at = ?3, last_error = ?4, "
         "locked_by = NULL, locked_until = NULL WHERE id = ?1 AND locked_by = ?2")
#: A run stopped by a graceful shutdown goes back to the queue as if it had not begun.
_PUT_BACK = ("UPDATE svc_jobs SET state = 'queued', attempt = attempt - 1, run_at = ?3, "
             "locked_by = NULL, locked_until = NULL WHERE id = ?1 AND locked_by = ?2")
#: Jobs whose runner's lease ran out (it crashed, was killed, or its machine is gone): queued
#: again, or dead when that was their last attempt.
_RESCUE = """UPDATE svc_jobs SET
  state = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'queued' END,
  finished_at = CASE WHEN attempt >= max_attempts THEN ?1 ELSE NULL END,
  last_error = 'its runner stopped during attempt ' || CAST(attempt AS TEXT)
    || ' (a crash or kill); the run may or may not have finished',
  run_at = ?1, locked_by = NULL, locked_until = NULL
WHERE state = 'running' AND locked_until < ?1"""
_PRUNE = "DELETE FROM svc_jobs WHERE state = 'done' AND finished_at < ?1"

# Schedules: ?1 name, ?2 spec, ?3 next run
_REGISTER = ("INSERT INTO svc_schedules (name, spec, next_run_at) VALUES (?1, ?2, ?3) "
             "ON CONFLICT (name) DO NOTHING")
#: A changed period or cron expression starts counting anew.
_RESPEC = "UPDATE svc_schedules SET spec = ?2, next_run_at = ?3 WHERE name = ?1 AND spec <> ?2"
_DUE = "SELECT name, next_run_at FROM svc_schedules"
# ?1 name, ?2 runner, ?3 now, ?4 lease end, ?5 the run after this one
_TAKE = ("UPDATE svc_schedules SET locked_by = ?2, locked_until = ?4, next_run_at = ?5 "
         "WHERE name = ?1 AND next_run_at <= ?3 AND (locked_until IS NULL OR locked_until < ?3)")
_RELEASE = ("UPDATE svc_schedules SET locked_by = NULL, locked_until = NULL "
            "WHERE name = ?1 AND locked_by = ?2")


def now_ms() -> int:
    return int(time.time() * 1000)


class ClaimedJob:
    """A claimed row of svc_jobs (the row mapper fills classes by their `__svc_fields__`)."""

    __svc_fields__ = (("id", "i64", False), ("name", "str", False), ("payload", "str", False),
                      ("attempt", "i64", False), ("max_attempts", "i64", False),
                      ("deadline_ms", "i64", False))
    __slots__ = ("id", "name", "payload", "attempt", "max_attempts", "deadline_ms")

    def __init__(self, id: int, name: str, payload: str, attempt: int,  # noqa: A002
                 max_attempts: int, deadline_ms: int) -> None:
        self.id = id
        self.name = name
        self.payload = payload
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.deadline_ms = deadline_ms


class JobId:
    __svc_fields__ = (("id", "i64", False),)
    __slots__ = ("id",)

    def __init__(self, id: int) -> None:  # noqa: A002
        self.id = id


class ScheduleRow:
    __svc_fields__ = (("name", "str", False), ("next_run_at", "i64", False))
    __slots__ = ("name", "next_run_at")

    def __init__(self, name: str, next_run_at: int) -> None:
        self.name = name
        self.next_run_at = next_run_at


class _TableVersion:
    __svc_fields__ = (("name", "str", False), ("version", "i64", False))
    __slots__ = ("name", "version")

    def __init__(self, name: str, version: int) -> None:
        self.name = name
        self.version = version


class _Count:
    __svc_fields__ = (("n", "i64", False),)
    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n


#: The databases known to have the tables at their current versions (made, brought up to
#: date or checked by this process).
_prepared: weakref.WeakSet[Db] = weakref.WeakSet()


async def create_tables(db: Db) -> None | SvcError:
    """Make svc_jobs and svc_schedules where missing, or bring them up to date, under the lock
    migrations take (SQLite's write lock, a PostgreSQL advisory lock), so that processes
    starting at once apply each step once: whoever gets the lock second finds it done."""
    if db in _prepared:
        return None
    tx = await begin_locked(db, _PG_LOCK_KEY)
    if isinstance(tx, SvcError):
        return tx
    current = await _bring_up_to_date(tx)
    if isinstance(current, SvcError):
        await tx._end(ROLLBACK)
        return current
    done = await tx._end(COMMIT)
    if done is None:
        _prepared.add(db)
    return done


async def ensure_tables(handle: Db | Tx) -> None | SvcError:
    """Before an `enqueue`: the tables exist once `serve` started, but `main` (before serving)
    and `svcc test` may enqueue first. Given a Tx they are made inside it (the Db is held by
    it), so they vanish if it rolls back, and are made again next time. Its lock is the one
    `create_tables` takes: SQLite's write lock, which the Tx holds from its BEGIN IMMEDIATE,
    or the advisory lock, taken here and held until the Tx ends."""
    if isinstance(handle, Db):
        return await create_tables(handle)
    if handle.db in _prepared:
        return None
    if handle.dialect == "postgresql":
        locked = await handle._submit(EXEC, "SELECT pg_advisory_xact_lock(?1)", (_PG_LOCK_KEY,),
                                      None)
        if isinstance(locked, SvcError):
            return locked
    current = await _bring_up_to_date(handle)
    if isinstance(current, SvcError):
        return current
    if current:  # nothing was made in the Tx: the tables stay whatever it does
        _prepared.add(handle.db)
    return None


async def _bring_up_to_date(tx: Tx) -> bool | SvcError:
    """In a transaction holding the lock: apply to each internal table the steps it misses and
    record its version. True when every table was already current (nothing changed)."""
    made = await tx._submit(EXEC, _VERSIONS, (), None)
    if isinstance(made, SvcError):
        return _cannot(made)
    rows = await tx._submit(ALL, _READ_VERSIONS, (), _TableVersion)
    if isinstance(rows, SvcError):
        return _cannot(rows)
    recorded = {row.name: row.version for row in rows}
    current = True
    for table, steps in STEPS.items():
        version = recorded.get(table)
        if version is None:  # none recorded: made by release 0.3 (version 1), or not made yet
            found = await tx._submit(ALL, _TABLE_EXISTS[tx.dialect], (table,), _Count)
            if isinstance(found, SvcError):
                return _cannot(found)
            version = 1 if found[0].n else 0
        elif version > len(steps):
            return SvcError("database", f"this database's {table} table is at version "
                            f"{version}, newer than this svc knows (version {len(steps)}): a "
                            "newer svc has used it; run that svc or a newer one against it")
        for number in range(version + 1, len(steps) + 1):
            applied = await tx._submit(SCRIPT, steps[number - 1][tx.dialect], (), None)
            if isinstance(applied, SvcError):
                return _cannot(applied, f"bring {table} to version {number}")
        if recorded.get(table) != len(steps):
            written = await tx._submit(EXEC, _RECORD_VERSION, (table, len(steps)), None)
            if isinstance(written, SvcError):
                return _cannot(written)
            current = False
    return current


def _cannot(error: SvcError, what: str = "make the job tables") -> SvcError:
    return SvcError(error.kind, f"cannot {what}: {error.message}")


def insert_statement() -> str:
    return _INSERT


def claim_statement(dialect: str, names: list[str]) -> str:
    return _CLAIM[dialect].format(names=", ".join(f"'{n}'" for n in names))


async def make_due(db: Db, names: list[str]) -> int | SvcError:
    """Make every queued job of these names due now, however long its backoff still had to
    run (`run_jobs_now` in a test)."""
    names_sql = ", ".join(f"'{n}'" for n in names)
    return await db._submit(EXEC, _DUE_NOW.format(names=names_sql), (now_ms(),), None)


async def claim(db: Db, statement: str, runner: str, count: int,
                timings: JobSettings = JobSettings()) -> list[ClaimedJob] | SvcError:
    """Claim up to `count` due jobs for `runner`, each leased until its deadline plus the
    timings' lease grace."""
    return await db._submit(ALL, statement, (runner, now_ms(), timings.lease_grace_ms, count),
                            ClaimedJob)


async def mark_done(db: Db, job: ClaimedJob, runner: str) -> int | SvcError:
    return await db._submit(EXEC, _DONE, (job.id, runner, now_ms()), None)


async def mark_retry(db: Db, job: ClaimedJob, runner: str, run_at: int,
                     error: str) -> int | SvcError:
    return await db._submit(EXEC, _RETRY, (job.id, runner, run_at, storable(error)), None)


async def mark_dead(db: Db, job: ClaimedJob, runner: str, error: str) -> int | SvcError:
    return await db._submit(EXEC, _DEAD, (job.id, runner, now_ms(), storable(error)), None)


def storable(error: str) -> str:
    """A failure's text as `last_error` can hold it on both databases: PostgreSQL text cannot
    hold U+0000, which a program's error message may (written as the escape \\u0000)."""
    return error.replace("\x00", "\\u0000") if "\x00" in error else error


async def put_back(db: Db, job: ClaimedJob, runner: str) -> int | SvcError:
    return await db._submit(EXEC, _PUT_BACK, (job.id, runner, now_ms()), None)


async def rescue(db: Db) -> int | SvcError:
    return await db._submit(EXEC, _RESCUE, (now_ms(),), None)


async def prune(db: Db) -> int | SvcError:
    return await db._submit(EXEC, _PRUNE, (now_ms() - KEEP_DONE_MS,), None)


async def register_schedule(db: Db, name: str, spec: str, first_run: int) -> None | SvcError:
    for statement in (_REGISTER, _RESPEC):
        done = await db._submit(EXEC, statement, (name, spec, first_run), None)
        if isinstance(done, SvcError):
            return done
    return None


async def schedule_times(db: Db) -> list[ScheduleRow] | SvcError:
    return await db._submit(ALL, _DUE, (), ScheduleRow)


async def take_schedule(db: Db, name: str, runner: str, lease_end: int,
                        next_run: int) -> int | SvcError:
    return await db._submit(EXEC, _TAKE, (name, runner, now_ms(), lease_end, next_run), None)


async def release_schedule(db: Db, name: str, runner: str) -> int | SvcError:
    return await db._submit(EXEC, _RELEASE, (name, runner), None)
