"""The errors every database backend returns (as values, never raised to svc code).

Both backends speak in the same kinds, so one program behaves the same on SQLite and on
PostgreSQL: a failing statement is a `database` error naming the SQL, a database that is
gone or a server that is stopping is `busy` (503), and so is a transaction PostgreSQL rolled
back to break a deadlock or a serialization conflict, because a lock it waited for was not
released in time, or whose statement the server cancelled (`rolled_back_to_retry`,
`lock_wait_ended`, `cancelled_by_the_database`). Those errors, when they come
from a transaction, are marked `retry`: the transaction left nothing behind, so the runtime may
run a handler the compiler proved safe again (svc.runtime.http.retries).
"""

from __future__ import annotations

from svc.runtime.db import constraints
from svc.runtime.lib.support import SvcError


def shutting_down() -> SvcError:
    return SvcError("busy", "shutting down")


def shorten(sql: str, limit: int = 200) -> str:
    """The SQL as one line, cut at `limit` characters, for error messages and logs."""
    sql = " ".join(str(sql).split())
    return sql if len(sql) <= limit else sql[:limit] + "..."


def statement_failed(exc: BaseException, sql: str, in_transaction: bool = False) -> SvcError:
    """A statement the database refused: the database's reason and the SQL. A violated
    constraint is `conflict` or `invalid` instead (constraints.py), with both in the log.
    A clash inside a transaction is marked `retry` (it rolled the whole transaction back)."""
    detail = f"{exc} (in SQL: {shorten(sql)})"
    sqlstate = _sqlstate(exc)
    if sqlstate in _CLASHED:
        return rolled_back_to_retry(detail, in_transaction)
    if sqlstate == _LOCK_NOT_AVAILABLE:
        return lock_wait_ended(detail, in_transaction)
    if sqlstate == _QUERY_CANCELED:
        return cancelled_by_the_database(detail, in_transaction)
    if sqlstate == _INVALID_REGULAR_EXPRESSION:
        return bad_pattern(str(exc), detail)
    category = constraints.category_of(exc)
    if category is not None:
        return constraints.constraint_error(category, detail)
    return SvcError("database", detail)


#: SQLSTATEs of a transaction the server rolled back because it clashed with another one:
#: deadlock_detected and serialization_failure. Nothing of it was kept, so running it again
#: is safe and will usually succeed.
_CLASHED = ("40P01", "40001")
#: lock_not_available: a statement waited for a lock longer than its `lock_timeout`
#: (svc.runtime.db.lock_waits bounds every wait inside a request's processing time).
_LOCK_NOT_AVAILABLE = "55P03"
#: query_canceled: the server cancelled the statement without svc asking (svc's own
#: cancellations end as asyncio cancellations, never as this error): a `statement_timeout`,
#: an administrator's pg_cancel_backend, or PostgreSQL's own race between a lock wait's
#: timer and the lock being granted (the wait's next lock then reports "user request"; seen
#: under contention with a 10 ms bound, tests/e2e/test_contention.py).
_QUERY_CANCELED = "57014"


#: PostgreSQL's SQLSTATE for a pattern it cannot compile (a REGEXP pattern RE2 took, svc's
#: check before sending: svc.runtime.db.regexp).
_INVALID_REGULAR_EXPRESSION = "2201B"


def bad_pattern(message: str, detail: str) -> SvcError:
    """`invalid` (400): the pattern is the caller's to correct. PostgreSQL's message starts
    with "invalid regular expression" as svc's own does."""
    if not message.startswith("invalid regular expression"):
        message = f"invalid regular expression: {message}"
    return SvcError("invalid", message, detail=f"invalid error: {detail}")


def _sqlstate(exc: BaseException) -> str | None:
    sqlstate = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return sqlstate if isinstance(sqlstate, str) else None


def rolled_back_to_retry(detail: str, in_transaction: bool = False) -> SvcError:
    """`busy` (503 with Retry-After): the client may send the same request again, unlike a
    `database` error (500), which would fail the same way. The database's message, which names
    the deadlock's processes or the conflicting rows, is only logged."""
    return _retryable("the transaction clashed with another one and was rolled back; retry it",
                      detail, in_transaction)


def lock_wait_ended(detail: str, in_transaction: bool = False) -> SvcError:
    """`busy` (503 with Retry-After): another transaction held a row or table this statement
    needed for longer than it could wait within its request's processing time. Not "the
    database is unavailable": the database answered, it was the other transaction that did
    not end in time."""
    return _retryable("a lock held by another transaction was not released in time; retry it",
                      detail, in_transaction)


def cancelled_by_the_database(detail: str, in_transaction: bool = False) -> SvcError:
    """`busy` (503 with Retry-After): the server cancelled the statement; like a clash, a
    cancelled statement's transaction keeps nothing, so the same request may be sent again."""
    return _retryable("the database cancelled the statement; retry it", detail, in_transaction)


def _retryable(message: str, detail: str, in_transaction: bool) -> SvcError:
    error = SvcError("busy", message, detail=f"busy error: {detail}")
    error.retry = in_transaction
    return error


#: How a several-statements error begins; the builtins add the .svc line to it.
SEVERAL_STATEMENTS = "several SQL statements in one call"


def several_statements(sql: str) -> SvcError:
    return SvcError("database", f"{SEVERAL_STATEMENTS}: db_exec, db_all and db_one run one "
                                f"statement per call (several belong in db_migrate) "
                                f"(in SQL: {shorten(sql)})")


def at_svc_line(error: SvcError, frame) -> SvcError:
    """The error with the .svc file and line of the call that made it (the caller's frame:
    generated code is compiled under its .svc file name, with its line numbers)."""
    if frame is None:
        return error
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    return SvcError(error.kind, f"{where}: {error.message}")
