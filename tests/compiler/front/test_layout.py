"""The canonical layout (`svcc fmt`'s rules, svc.compiler.front.layout): each rule on a small
text, idempotence, every comment kept in place, and the meaning unchanged (same tokens, same
check result, same generated code)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from svc import pipeline
from svc.compiler.front.layout import _comments, _signature, format_text
from svc.compiler.front.lexer import tokenize
from svc.compiler.source import SourceFile

REPO = Path(__file__).resolve().parents[3]
GOOD_CORPUS = sorted((REPO / "tests/compiler/corpus/good").glob("*.svc"))

MESSY = """\


# the header comment
from "models.svc" import Task,TaskInput
LIMIT:i64=100
class Page:
  items : List[ i64 ]
  next: str ?



def f( a:i64,b : str? )->Result[ List[ i64 ],Error ] :

     # a leading comment
     x=-a+  3*(-2)   # an end-of-line comment
     y = [1,2,
       3]
     z = g(
  1,
         2,


          # a comment inside brackets
  )
     if not(x>=2)and y[0]!=1 :return error( "x" )
     s = t[1 :x+1] + t[:2] + f"{ a }" + 'single'
     match parse_i64(s):
        case Some( v ) : return ok( [v] )
        case None:
           pass
           # the end of a block
   # back at the function's level
     return ok([ ])
@get( "/x" )
async def h(db :Db)->Result[Task,Error]:
    return await db_one[Task](db,Task(id = 1, n = -2))   \t
# trailing



"""

CANONICAL = """\
# the header comment
from "models.svc" import Task, TaskInput
LIMIT: i64 = 100
class Page:
    items: List[i64]
    next: str?

def f(a: i64, b: str?) -> Result[List[i64], Error]:
    # a leading comment
    x = -a + 3 * (-2)  # an end-of-line comment
    y = [1, 2,
         3]
    z = g(
        1,
        2,

        # a comment inside brackets
    )
    if not (x >= 2) and y[0] != 1: return error("x")
    s = t[1:x + 1] + t[:2] + f"{ a }" + 'single'
    match parse_i64(s):
        case Some(v): return ok([v])
        case None:
            pass
            # the end of a block
    # back at the function's level
    return ok([])
@get("/x")
async def h(db: Db) -> Result[Task, Error]:
    return await db_one[Task](db, Task(id=1, n=-2))
# trailing
"""


def formatted(text: str) -> str:
    result, diagnostics = format_text("t.svc", text)
    assert diagnostics == [] and result is not None, diagnostics
    return result


def test_a_messy_file_gets_the_canonical_layout() -> None:
    assert formatted(MESSY) == CANONICAL


def test_the_layout_is_idempotent() -> None:
    assert formatted(CANONICAL) == CANONICAL


@pytest.mark.parametrize("path", GOOD_CORPUS, ids=lambda p: p.name)
def test_every_good_corpus_file_keeps_its_tokens_and_comments_and_formats_once(path) -> None:
    source = SourceFile(str(path), path.read_text(encoding="utf-8"))
    result = formatted(source.text)
    again = SourceFile(str(path), result)
    assert _signature(tokenize(again)[0]) == _signature(tokenize(source)[0])
    assert _comments(again, tokenize(again)[0]) == _comments(source, tokenize(source)[0])
    assert formatted(result) == result


def test_every_comment_stays_in_its_place() -> None:
    lines = formatted(MESSY).splitlines()
    assert lines[0] == "# the header comment"
    assert lines[lines.index("def f(a: i64, b: str?) -> Result[List[i64], Error]:") + 1] == (
        "    # a leading comment")
    assert "    x = -a + 3 * (-2)  # an end-of-line comment" in lines
    assert lines[lines.index("    z = g(") + 4] == "        # a comment inside brackets"
    assert lines[lines.index("            pass") + 1] == "            # the end of a block"
    assert lines[-1] == "# trailing"


@pytest.mark.parametrize("text, expected", [
    ("def f():\n\n\n\n    x = 1\n\n\n\n    y = 2\n", "def f():\n    x = 1\n\n    y = 2\n"),
    ("\n\n\ndef f():\n    pass\n\n\n", "def f():\n    pass\n"),
    ("def f():\n    pass\n\n\n\ndef g():\n    pass\n", "def f():\n    pass\n\ndef g():\n    pass\n"),
    ("def f():\r\n    pass  \r\n", "def f():\n    pass\n"),
    ("def f():\n    pass", "def f():\n    pass\n"),
    ("", ""),
    ("# only a comment   \n\n\n", "# only a comment\n"),
], ids=["blank-lines-in-a-block", "blank-lines-at-the-ends", "between-definitions", "crlf",
        "final-newline", "empty-file", "comment-only-file"])
def test_lines_blank_lines_and_line_ends(text: str, expected: str) -> None:
    assert formatted(text) == expected


@pytest.mark.parametrize("line, expected", [
    ("x=a[ 1 ]+b [2]", "x = a[1] + b[2]"),
    ("x=f (1 ,2)", "x = f(1, 2)"),
    ("x = - 1", "x = -1"),
    ("x = a -  - b", "x = a - -b"),
    ("x = [ - 1, -a]", "x = [-1, -a]"),
    ("return(- 1)", "return (-1)"),
    ("x = not(a)or b", "x = not (a) or b"),
    ("x = a.b . c(d)", "x = a.b.c(d)"),
    ("x = s[ : 2] + s[a :] + s[a+1 : b]", "x = s[:2] + s[a:] + s[a + 1:b]"),
    ("x = T(a = 1,b= [ ])", "x = T(a=1, b=[])"),
    ("x = db_one[ Task ] (db)", "x = db_one[Task](db)"),
    ("let y : List[ Map[str,i64] ]? = None", "let y: List[Map[str, i64]]? = None"),
    ("x += 1 ; ", None),
], ids=lambda v: v if isinstance(v, str) else "")
def test_spacing_inside_a_line(line: str, expected: str | None) -> None:
    text = f"def f():\n    {line}\n"
    result, diagnostics = format_text("t.svc", text)
    if expected is None:
        assert result is None and diagnostics  # not svc: left to the diagnostics
    else:
        assert result == f"def f():\n    {expected}\n"


def test_a_file_with_a_syntax_error_gets_diagnostics_and_no_text() -> None:
    result, diagnostics = format_text("t.svc", "def f():\n    x = (1,\n")
    assert result is None
    assert [(d.span.line, d.message) for d in diagnostics] == [
        (2, "'(' was never closed (expected ')')")]


SAME_LINES = """\
class Item:
  id : i64
  name:str
@get( "/items/{id}" )
async def item(id:i64)->Result[Item,Error]:
  if id<1 :
        return error( "id must be at least 1" )
  return ok(Item(id = id,name = "item " +str(id)))
async def main()->Result[unit,Error]:
  port=try parse_i64(env("SVC_PORT","8080"))
  db=try await db_open( ":memory:" )
  return await serve(db,port)
"""


def test_the_formatted_program_checks_and_generates_the_same_code(tmp_path: Path) -> None:
    """Spacing and indentation only (same lines), so even the line numbers the generated code
    carries (for run-time fault lines) must agree; columns move, of course."""
    messy, tidy = tmp_path / "messy.svc", tmp_path / "tidy.svc"
    messy.write_text(SAME_LINES)
    tidy.write_text(formatted(SAME_LINES))
    assert tidy.read_text() != SAME_LINES
    generated = []
    for path in (messy, tidy):
        checked = pipeline.check(pipeline.Target(file=str(path)))
        assert isinstance(checked, pipeline.Checked), getattr(checked, "diagnostics", None)
        [(_, module)] = pipeline.generate(checked)
        lines = [getattr(node, "lineno", None) for node in ast.walk(module)]
        generated.append((ast.dump(module).replace(path.name, "x.svc"), lines))
    assert generated[0] == generated[1]


JOB_ATTRIBUTES = """\
class Welcome:
    user: str

@job( "welcome" ,attempts = 3,deadline= "2s" )
async def send(db: Db, w: Welcome) -> Result[unit, Error]:
    return ok(())

@every ("5m",)  # a trailing comma
async def tick(db: Db) -> Result[unit, Error]:
    return ok(())

@cron(
        "0 3 * * *",
   deadline="10m" ,
)
async def nightly(db: Db) -> Result[unit, Error]:
    return ok(())

@job("x", attempts=3, deadline="2s")
async def already_tidy(db: Db, w: Welcome) -> Result[unit, Error]:
    return ok(())
"""


def test_job_and_schedule_attributes_get_the_canonical_layout_once(tmp_path: Path) -> None:
    """`@job("x", attempts=3, deadline="2s")` is laid out as a call with named arguments (no
    spaces around '=', one after ','), stays as it is once tidy, and a multi-line attribute
    keeps its lines with a hanging indent; formatting the result changes nothing."""
    tidy = formatted(JOB_ATTRIBUTES)
    lines = tidy.splitlines()
    assert '@job("welcome", attempts=3, deadline="2s")' in lines
    assert '@every("5m",)  # a trailing comma' in lines
    start = lines.index("@cron(")
    assert lines[start:start + 4] == ["@cron(", '    "0 3 * * *",', '    deadline="10m",', ")"]
    assert '@job("x", attempts=3, deadline="2s")' in lines
    assert formatted(tidy) == tidy
    # the laid-out program is the same program: it checks, with the same jobs and schedules
    found = []
    for name, text in (("messy.svc", JOB_ATTRIBUTES), ("tidy.svc", tidy)):
        (tmp_path / name).write_text(text + "\ndef main():\n    pass\n")
        checked = pipeline.check(pipeline.Target(file=str(tmp_path / name)))
        assert isinstance(checked, pipeline.Checked), getattr(checked, "diagnostics", None)
        found.append(([(j.name, j.attempts, j.backoff_ms, j.deadline_ms)
                       for j in checked.program.jobs.values()],
                      [(s.handler, s.every_ms, s.cron, s.deadline_ms)
                       for s in checked.program.schedules]))
    assert found[0] == found[1] == (
        [("welcome", 3, 1000, 2000), ("x", 3, 1000, 2000)],
        [("tick", 300_000, "", 60_000), ("nightly", 0, "0 3 * * *", 600_000)])


GUARDS = '''\
class User:
    id: i64

guard( "/admin" ,require_user,  check , )
guard(
  "/me",
      check)

def require_user(h: Headers) -> Result[User, Error]:
    return ok(User(id=1))

def check(h: Headers) -> Result[unit, Error]:
    return ok(())

@guard( require_user )
@get("/me")
async def me(u: User) -> Result[User, Error]:
    return ok(u)

@get("/admin/x")
async def admin_x(u: User) -> Result[User, Error]:
    return ok(u)
'''


def test_guard_declarations_and_attributes_get_the_canonical_layout_once(tmp_path: Path) -> None:
    """`guard("/p", f, g)` at top level is laid out as a call (a multi-line one keeps its
    lines, with a hanging indent), `@guard(f)` as an attribute; formatting again changes
    nothing, and the laid-out program runs the same guards on the same routes."""
    tidy = formatted(GUARDS)
    lines = tidy.splitlines()
    assert 'guard("/admin", require_user, check,)' in lines
    start = lines.index("guard(")
    assert lines[start:start + 4] == ["guard(", '    "/me",', "    check)", ""]
    assert "@guard(require_user)" in lines
    assert formatted(tidy) == tidy
    found = []
    for name, text in (("messy.svc", GUARDS), ("tidy.svc", tidy)):
        (tmp_path / name).write_text(text + "\ndef main():\n    pass\n")
        checked = pipeline.check(pipeline.Target(file=str(tmp_path / name)))
        assert isinstance(checked, pipeline.Checked), getattr(checked, "diagnostics", None)
        found.append([(r.path, [(g.guard, g.prefix) for g in r.guards])
                      for r in checked.program.routes])
    assert found[0] == found[1] == [
        ("/me", [("check", "/me"), ("require_user", None)]),
        ("/admin/x", [("require_user", "/admin"), ("check", "/admin")])]


def test_a_prefix_guard_keeps_its_methods_keyword() -> None:
    """`methods=[...]` is laid out as a named argument (no spaces around `=`) and stays."""
    messy = 'guard( "/items" , can_write ,methods = [ "POST","DELETE" ] )\n'
    assert formatted(messy) == 'guard("/items", can_write, methods=["POST", "DELETE"])\n'
