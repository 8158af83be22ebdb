"""Which routes the runtime runs again after their transaction clashed (compiler/effects):
each rule, each reason not to, and the builtins' effects."""

from __future__ import annotations

import pytest

from svc.compiler.builtin_table import BUILTINS
from svc.compiler.effects.retries import mark_retried, retry_sentence
from tests.compiler.check.test_checker import checked

HEAD = """
class Account:
    id: i64
    balance: i64

class Job:
    n: i64

@job("later")
async def later(db: Db, p: Job) -> Result[unit, Error]:
    return ok(())

async def move(tx: Tx, id: i64) -> Result[unit, Error]:
    try await db_exec(tx, "UPDATE accounts SET balance = balance - 1 WHERE id = ?1", id)
    return ok(())
"""


def route(body: str, extra: str = "", guard_limits: dict | None = None):
    """The one `POST /t/{id}` route of a program whose handler has `body`."""
    program = checked(HEAD + extra + '\n@post("/t/{id}")\nasync def t(db: Db, id: i64) -> '
                      'Result[unit, Error]:\n' + body + MAIN)
    if guard_limits:
        program.settings.tables["guard_limits"] = guard_limits
    mark_retried(program)
    (found,) = [r for r in program.routes if r.path == "/t/{id}"]
    return found


MAIN = """
async def main() -> Result[unit, Error]:
    db = try await db_open(":memory:")
    try await serve(db, 8080)
    return ok(())
"""

ONE_TRANSACTION = """    tx = try await db_begin(db)
    try await move(tx, id)
    try await db_commit(tx)
    return ok(())
"""


def test_a_handler_whose_only_lasting_work_is_one_transaction_is_retried():
    found = route(ONE_TRANSACTION)
    assert found.retried and found.not_retried_because == ""
    assert retry_sentence(found).startswith("run again when its transaction clashes")


@pytest.mark.parametrize("before", [
    '    rows = try await db_all[Account](db, "SELECT id, balance FROM accounts")\n',
    '    one = try await db_one[Account](db, "  select id, balance FROM accounts WHERE id = 1")\n',
    '    try await enqueue(tx, "later", Job(n=1))\n',
    '    await sleep(1)\n    stamp = now_ms()\n    token = random_token(8)\n',
])
def test_reads_jobs_in_the_transaction_and_pure_builtins_keep_it_retried(before):
    body = ONE_TRANSACTION.replace("    try await move", before + "    try await move")
    assert route(body).retried


@pytest.mark.parametrize("line, why", [
    ('    print("moving")\n', "print at t.svc:{line} writes to standard output"),
    ('    log_info("moving", Map())\n', "log_info at t.svc:{line} writes a log line"),
    ('    answer = try await http_get("http://127.0.0.1:9/", headers_of([]))\n',
     "http_get at t.svc:{line} calls another service"),
    ('    try await enqueue(db, "later", Job(n=1))\n',
     "enqueue at t.svc:{line} enqueues a job outside the transaction"),
    ('    try await db_exec(db, "UPDATE accounts SET balance = 0")\n',
     "db_exec at t.svc:{line} writes outside the transaction"),
    ('    rows = try await db_all[Account](db, "UPDATE accounts SET balance = 0 RETURNING id, '
     'balance")\n', "db_all at t.svc:{line} writes outside the transaction"),
])
def test_anything_a_run_again_would_repeat_keeps_it_from_being_retried(line, why):
    found = route(line + ONE_TRANSACTION)
    assert not found.retried
    where = HEAD.count("\n") + 4  # the handler's first line
    assert found.not_retried_because.startswith(why.format(line=where)), found
    assert retry_sentence(found).startswith("not run again when its transaction clashes: ")


def test_an_effect_in_a_called_function_is_found_where_it_is():
    extra = '\nasync def note(db: Db) -> Result[unit, Error]:\n    print("noted")\n' \
            '    return ok(())\n'
    found = route("    try await note(db)\n" + ONE_TRANSACTION, extra)
    line = HEAD.count("\n") + 3
    assert found.not_retried_because.startswith(f"print at t.svc:{line} ")


def test_a_db_write_given_the_tx_inside_a_helper_is_part_of_the_transaction():
    assert route(ONE_TRANSACTION).retried  # `move` writes through its Tx


@pytest.mark.parametrize("body", [
    # two transactions: the first committed would be committed again
    ONE_TRANSACTION.replace("    return ok(())\n", "") + ONE_TRANSACTION.replace("tx =", "tx2 =")
    .replace("(tx", "(tx2").replace("tx)", "tx2)"),
    # one db_begin, in a loop
    "    for i in range(3):\n" + "".join("    " + line + "\n" for line in
                                        ONE_TRANSACTION.splitlines()[:-1]) + "    return ok(())\n",
])
def test_more_than_one_transaction_is_not_retried(body):
    found = route(body)
    assert not found.retried
    assert found.not_retried_because.startswith("it may begin more than one transaction")


def test_a_helper_that_begins_called_twice_is_two_transactions():
    extra = '\nasync def pay(db: Db, id: i64) -> Result[unit, Error]:\n' \
            + ONE_TRANSACTION.replace("move(tx, id)", "move(tx, id)")
    found = route("    try await pay(db, id)\n    try await pay(db, id)\n    return ok(())\n", extra)
    assert not found.retried and "more than one transaction" in found.not_retried_because
    assert route("    try await pay(db, id)\n    return ok(())\n", extra).retried


def test_recursion_is_not_retried():
    extra = '\nasync def again(db: Db, id: i64) -> Result[unit, Error]:\n' \
            '    if id > 0:\n        try await again(db, id - 1)\n' + ONE_TRANSACTION
    found = route("    try await again(db, id)\n    return ok(())\n", extra)
    assert not found.retried and "calls itself again" in found.not_retried_because


def test_without_a_transaction_there_is_nothing_to_say():
    found = route('    try await db_exec(db, "UPDATE accounts SET balance = 0")\n    return ok(())\n')
    assert not found.retried and found.not_retried_because == ""
    assert retry_sentence(found) is None


GUARD = """
class User:
    name: str

async def require_user(h: Headers) -> Result[User, Error]:
    return ok(User(name="ada"))
"""


def test_a_guard_with_a_limit_would_take_a_second_token():
    program_text = ONE_TRANSACTION
    extra = GUARD + '\n@guard(require_user)'
    found = route(program_text, extra, guard_limits={"require_user": {"rate": 1}})
    assert not found.retried
    assert "its guard require_user has a [guard_limits] limit" in found.not_retried_because
    assert route(program_text, extra).retried


def test_every_builtin_is_judged():
    """A new builtin must say whether a run again would repeat what it does: those with an
    effect are listed here, the rest are known to have none (or are judged by the pass)."""
    with_effect = {name for name, b in BUILTINS.items() if b.effect}
    assert with_effect == {
        "print", "log_info", "log_warn", "log_error", "http_get", "http_send", "http_stub",
        "python_stub", "upload_move", "publish", "send_event", "ws_send", "ws_close", "ws_forward",
        "test_request", "assert_true", "assert_eq", "db_migrate", "run_jobs", "run_jobs_now",
        "serve",
        "task_demo", "scope_demo", "actor_demo", "actor_pair_demo", "supervisor_demo",
        "queue_demo"}
    without = set(BUILTINS) - with_effect
    judged_by_the_pass = {"db_begin", "db_exec", "db_all", "db_one", "enqueue"}
    assert judged_by_the_pass <= without
    assert len(without) == 92, sorted(without)  # a new builtin: decide, then count it here


def test_a_route_that_calls_a_python_function_is_not_retried():
    """Its Python code may have done anything (written a file, called a service)."""
    python = ('\n@python("html", "escape")\nasync def escape(text: str) -> '
              'Result[str, Error]\n')
    body = '    s = try await escape("<b>")\n' + ONE_TRANSACTION
    found = route(body, python)
    assert not found.retried
    assert found.not_retried_because == (
        "escape at t.svc:22 calls Python (html.escape), which may have done anything a run "
        "again would repeat")
