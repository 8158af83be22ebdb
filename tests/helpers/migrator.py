"""Migrates one database with MIGRATION_STEPS and prints `applied <n>` (or the error).

Several of these run at once in the concurrent-migration tests: each step must be applied
exactly once in all. A step fails if it runs twice (CREATE TABLE without IF NOT EXISTS, and a
row with a fixed primary key), and the slow step keeps the lock held for a while, so the
processes really overlap. Usage: python migrator.py <database path or URL> <start at>
(`start at` is a time.time() to wait for, so the processes begin together).
"""

import asyncio
import sys
import time

from svc.runtime.db import db_migrate, db_open
from svc.runtime.lib.support import SvcError

MIGRATION_STEPS = [
    "CREATE TABLE steps_run (step BIGINT PRIMARY KEY); INSERT INTO steps_run (step) VALUES (1);",
    "CREATE TABLE filler (n BIGINT PRIMARY KEY); INSERT INTO steps_run (step) VALUES (2);",
    # many rows: the slow step (the others wait for its lock)
    "INSERT INTO filler (n) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
    "WHERE x < 200000) SELECT x FROM c; INSERT INTO steps_run (step) VALUES (3);",
    "INSERT INTO steps_run (step) VALUES (4);",
]


async def main(url: str, start_at: float) -> None:
    db = await db_open(url)
    if isinstance(db, SvcError):
        print(f"error {db.message}", flush=True)
        return
    time.sleep(max(0.0, start_at - time.time()))
    applied = await db_migrate(db, MIGRATION_STEPS)
    if isinstance(applied, SvcError):
        print(f"error {applied.kind}: {applied.message}", flush=True)
    else:
        print(f"applied {applied}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
