"""Fuzzing `svcc check`: mutated good programs must only ever produce diagnostics, never an
exception. Seeded, so a failure is reproducible from the printed seed and index.

A few hundred inputs by default; `SVC_FUZZ_EXAMPLES=10000` for the long run.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc.compiler.diagnostics import render
from svc.compiler.front.lexer import tokenize
from svc.compiler.source import SourceFile
from svc.pipeline import Failed, Target, check

CORPUS = Path(__file__).parent / "corpus"
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
#: Where the seed programs come from: the compiler corpus and the example programs.
ROOTS = {"corpus": CORPUS, "examples": EXAMPLES_DIR}
EXAMPLES = int(os.environ.get("SVC_FUZZ_EXAMPLES", "300"))
SEED = int(os.environ.get("SVC_FUZZ_SEED", "20261122"))
LAYOUT = ("newline", "indent", "dedent", "eof")
SNIPPETS = [b"(", b")", b"[", b"]", b":", b"\n", b"    ", b"\t", b"\"", b"'", b"\\", b"\\u{",
            b"@get(", b"->", b"?", b"=", b"+=", b"match x:\n", b"case ", b"try ", b"await ",
            b"let ", b"def ", b"class ", b"import \"", b"None", b"9223372036854775808",
            b"-", b".", b",", b"#", b"\xff", b"\xc3", b"\x00", b"\r", b"\xe2\x80\xa8", b"_",
            b"db_all[Task](", b"[i64]", b"Result[", b"if ", b"elif ", b"else:", b"return ",
            b'f"', b"f'", b"{", b"}", b"{{", b"}}", b'f"{x}', b'{len(', b'"}"',
            b"enum ", b"enum Role: a, b\n", b"Some(", b"LIMIT: i64 = ", b"Role.admin",
            b"case Role.a:", b"X: List[i64] = [1]\n",
            b"[1:]", b"[:2]", b"[1:2]", b"[:]", b'matches(x, "(a")', b'find_all(x, "[a-")',
            b'replace_re(x, "(a)", "$2")', b"Map[str, i64]", b"Map[str, i64]()", b"Map()",
            b"class Page[T]:\n    items: List[T]\n", b"Page[Task]", b"Page[Task](items=[])",
            b'get(m, "k")', b'set(m, "k", 1)', b"keys(m)", b"[T]", b"[T, U]",
            b'@job(', b'@every(', b'@cron(', b'attempts=', b'enqueue(', b'@job("x")\n',
            b'deadline="2s"', b'"5m"', b'"0 3 * * *"', b'backoff=', b'enqueue(db, "x", ',
            b"config[", b"config[Task]()", b"config[i64]()"]
#: The log builtins among the mutation snippets.
SNIPPETS += [b"log_info(", b'log_warn("m", Map())', b"log_error(x, m)", b"Map[str, str]()",
             b'log_info("m", Map[str, i64]())']
#: The pieces random f-strings are made of (test_fstrings_never_raise).
FSTRING_PIECES = ["{", "}", "{{", "}}", "x", "name", "1", "2.5", "+", "(", ")", "[", "]", '"',
                  "'", "\\", "\\n", "\\u{41}", "\\q", " ", "#", "f\"", "len(", ",", ".",
                  "True", "None", "ok(", "\t", "é", "$", "json_encode(", "try ", "await "]


def seeds() -> list[tuple[Path, bytes]]:
    """The programs to mutate, by path relative to the copied tree (so imports and
    include_text keep working)."""
    return [(Path(name) / f.relative_to(root), f.read_bytes())
            for name, root in ROOTS.items() if root.is_dir()
            for f in sorted(root.rglob("*.svc"))
            if f.is_file() and ".svc" not in f.parent.parts and f.stat().st_size < 200_000]


def copy_sources(target: Path) -> None:
    """Copy the seed trees, source files only (no databases or build output)."""
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n == ".svc" or not (
            Path(folder, n).is_dir() or n.endswith((".svc", ".html", ".toml")))]
    for name, root in ROOTS.items():
        if root.is_dir():
            shutil.copytree(root, target / name, ignore=ignore)


def token_edit(rng: random.Random, data: bytes) -> bytes:
    """Delete, duplicate or swap whole tokens, found with the lexer itself."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    source = SourceFile("fuzz.svc", text)
    tokens = [t for t in tokenize(source)[0] if t.kind not in LAYOUT]
    if len(tokens) < 2:
        return data
    lines = source.lines
    a, b = sorted(rng.sample(tokens, 2), key=lambda t: (t.line, t.col))
    if a.line != b.line:
        b = a  # swaps across lines are done by the line-level edits
    line = lines[a.line - 1]
    piece_a = line[a.col - 1:a.end_col - 1]
    piece_b = line[b.col - 1:b.end_col - 1]
    choice = rng.randrange(3)
    if choice == 0:
        line = line[:a.col - 1] + line[a.end_col - 1:]
    elif choice == 1:
        line = line[:a.end_col - 1] + " " + piece_a + line[a.end_col - 1:]
    elif b is not a:
        line = (line[:a.col - 1] + piece_b + line[a.end_col - 1:b.col - 1] + piece_a
                + line[b.end_col - 1:])
    lines = list(lines)
    lines[a.line - 1] = line
    return "\n".join(lines).encode("utf-8")


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to four random edits: token deletes, duplicates and swaps, byte-range edits,
    inserted bytes and snippets, truncation, and indentation changes."""
    for _ in range(rng.randint(1, 4)):
        if not data:
            data = rng.choice(SNIPPETS)
        op = rng.randrange(10)
        if op >= 8:
            data = token_edit(rng, data)
            continue
        i = rng.randrange(len(data))
        j = min(len(data), i + rng.randint(1, 12))
        if op == 0:
            data = data[:i] + data[j:]
        elif op == 1:
            data = data[:i] + data[i:j] + data[i:]
        elif op == 2:
            k = rng.randrange(len(data))
            a, b = sorted((i, k))
            data = data[:a] + data[b:b + (j - i)] + data[a + (j - i):b] + data[a:a + (j - i)] \
                + data[b + (j - i):]
        elif op == 3:
            data = data[:i] + bytes([rng.randrange(256)]) + data[i:]
        elif op == 4:
            data = data[:i] + rng.choice(SNIPPETS) + data[i:]
        elif op == 5:
            data = data[:i]
        elif op == 6:
            lines = data.split(b"\n")
            n = rng.randrange(len(lines))
            lines[n] = b" " * rng.choice((1, 2, 4, 8)) + lines[n] if rng.random() < 0.5 \
                else lines[n].lstrip(b" ")
            data = b"\n".join(lines)
        else:
            lines = data.split(b"\n")
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
            data = b"\n".join(lines)
    return data


def rejected_without_raising(target: Path, data: bytes, index: int) -> bool:
    """Write `data` to `target` and check it: True when it gave diagnostics (each with a valid
    position and renderable), False when it checked; an exception fails the test with the
    input that caused it."""
    target.write_bytes(data)
    try:
        result = check(Target(file=str(target)))
        diagnostics = result.diagnostics if isinstance(result, Failed) else []
        for diagnostic in diagnostics:
            assert diagnostic.span.line >= 1 and diagnostic.span.col >= 1
            render(diagnostic, result.sources.get(diagnostic.span.file))
    except Exception as exc:  # pragma: no cover - the failure report
        (target.parent / "failing.svc").write_bytes(data)
        raise AssertionError(f"seed {SEED}, input {index} raised {exc!r}; input:\n"
                             f"{data.decode('utf-8', 'replace')}") from exc
    return bool(diagnostics)


def rejected_or_compiled(target: Path, programs: Iterator[str]) -> None:
    """Each program gives diagnostics (rejected_without_raising) or, when it checks, also
    generates and compiles; both good and bad programs must have been made."""
    from svc.pipeline import Compiled, compile as compile_program

    rejected = 0
    for index, text in enumerate(programs):
        if rejected_without_raising(target, text.encode("utf-8"), index):
            rejected += 1
            continue
        assert isinstance(compile_program(Target(file=str(target))), Compiled), text
    assert 0 < rejected < EXAMPLES  # both good and bad programs were made


@pytest.mark.fuzz
@pytest.mark.timeout(3600)
def test_check_never_raises_on_mutated_programs(tmp_path: Path) -> None:
    bases = seeds()
    assert bases
    # The mutant is written next to its original in a copy of the corpus, so its imports
    # resolve and multi-file programs are exercised too.
    copy_sources(tmp_path)
    rng = random.Random(SEED)
    started = time.monotonic()
    rejected = 0
    for index in range(EXAMPLES):
        relative, original = rng.choice(bases)
        data = mutate(rng, original)
        target = tmp_path / relative.parent / "fuzz_main.svc"
        rejected += rejected_without_raising(target, data, index)
    print(f"fuzz: {EXAMPLES} inputs ({rejected} with diagnostics) in "
          f"{time.monotonic() - started:.1f}s (seed {SEED})")
    assert rejected > EXAMPLES // 2  # the mutations do break programs


@pytest.mark.fuzz
def test_fstrings_never_raise(tmp_path: Path) -> None:
    """Random f-string literals (braces, quotes, escapes, nested f-strings, code pieces) in a
    program: each checks or gives diagnostics with valid positions, never an exception."""
    rng = random.Random(SEED)
    target = tmp_path / "fstrings.svc"
    rejected = 0
    for index in range(EXAMPLES):
        body = "".join(rng.choice(FSTRING_PIECES) for _ in range(rng.randint(0, 12)))
        quote = rng.choice("\"'")
        text = (f"def main():\n    name = \"ada\"\n    x = 1\n"
                f"    print(f{quote}{body}{quote})\n")
        rejected += rejected_without_raising(target, text.encode("utf-8"), index)
    assert 0 < rejected < EXAMPLES  # both good and bad f-strings were made


#: The pieces of random top-level constants and enums (test_constants_and_enums_never_raise).
DECLARATION_PIECES = ["enum", "Role", ":", " ", ",", "a", "b", "\n", "    ", "LIMIT", "i64",
                      "=", "1", "Some(", ")", "None", "[", "]", "Role.a", "List[", "?", "Point(",
                      "x=", "len(", '"s"', "-", "2.5", "True", "Some", "Role.", "str"]


@pytest.mark.fuzz
def test_constants_and_enums_never_raise(tmp_path: Path) -> None:
    """Random top-level constant and enum declarations (and uses of them in `main`, a match
    on an enum and `Some(...)`): each checks or gives diagnostics with valid positions."""
    rng = random.Random(SEED)
    target = tmp_path / "declarations.svc"
    rejected = 0
    for index in range(EXAMPLES):
        made = "".join(rng.choice(DECLARATION_PIECES) for _ in range(rng.randint(1, 14)))
        text = ("class Point:\n    x: i64\n\n" + made + "\n\n"
                "def main():\n    v = Some(LIMIT)\n    match Role.a:\n        case Role.a: pass\n"
                "        case Role.b: pass\n")
        rejected += rejected_without_raising(target, text.encode("utf-8"), index)
    assert rejected > 0


#: The pieces of random generic classes, maps and their uses (test_maps_and_generics_never_raise).
GENERIC_PIECES = ["class", " ", "Box", "Page", "[", "]", "T", "U", ",", ":", "\n", "    ",
                  "items", "List[", "Map[", "str", "i64", "i64?", "Task", "view[bytes]", "?",
                  "=", "(", ")", "item=", "Map()", "get(", "set(", "keys(", "m", '"k"', "1",
                  "Box[Task]", "Page[Box[T]]", "for k in m:", "Tx", "Headers", "unit"]


@pytest.mark.fuzz
def test_maps_and_generics_never_raise(tmp_path: Path) -> None:
    """Random generic class declarations and uses of them and of maps (as types, in
    constructions and in the map builtins): each checks or gives diagnostics with valid
    positions, never an exception (a self-instantiating class included)."""
    rng = random.Random(SEED)
    target = tmp_path / "generics.svc"
    rejected = 0
    for index in range(EXAMPLES):
        made = "".join(rng.choice(GENERIC_PIECES) for _ in range(rng.randint(1, 16)))
        text = ("class Task:\n    id: i64\n\nclass Box[T]:\n    item: T\n    next: Box[T]?\n\n"
                + made + "\n\ndef main():\n    let m: Map[str, Box[Task]] = Map()\n"
                "    set(m, \"a\", Box(item=Task(id=1), next=None))\n    for k in m:\n"
                "        print(k)\n")
        rejected += rejected_without_raising(target, text.encode("utf-8"), index)
    assert rejected > 0


#: The pieces of random job and schedule attributes and enqueue calls
#: (test_jobs_and_schedules_never_raise).
JOB_PIECES = ["@job(", "@every(", "@cron(", "@", "job", '"welcome"', '"Bad Name"', '"5m"',
              '"500ms"', '"0 3 * * *"', '"0 3 * *"', '"61 * * * *"', '"0 0 31 2 *"', "attempts=",
              "backoff=", "deadline=", "retries=", "3", "0", "-1", "1001", "9223372036854775808",
              '"2s"', '"1 s"', '"8d"', '"7d"', ",", ")", "(", " ", "\n", '@get("/x")\n', "=",
              "enqueue(", "db", "tx", "w", '"mial"', "Welcome(user=\"a\")", "Other(n=1)", "1",
              "async def ", "def ", "class "]
_JOB_TEXTS = ['"welcome"', '"other"', '"a.b-c_1"', '"Bad Name"', '""', '"5m"', '"1s"', '"500ms"',
              '"8d"', '"0 3 * * *"', '"*/5 * * * mon"', '"0 3 * *"', '"61 * * * *"', "x", "3"]
_JOB_OPTIONS = ["attempts", "backoff", "deadline", "retries"]
_JOB_VALUES = ["1", "3", "0", "1000", "1001", '"3"', '"100ms"', '"2s"', '"0ms"', '"7d"', '"8d"',
               '"1 s"', "x", "-1"]
_PAYLOADS = ['Welcome(user="a")', "w", "w", "Other(n=1)", '"a"', "None"]


def job_attribute(rng: random.Random) -> str:
    """An attribute line as a programmer might write it (any kind, text and options, good or
    bad), sometimes a second one, sometimes with random pieces spliced in."""
    kind = rng.choice(["@job(", "@job(", "@every(", "@cron(", '@get("/x", '])
    options = "".join(f", {rng.choice(_JOB_OPTIONS)}={rng.choice(_JOB_VALUES)}"
                      for _ in range(rng.choice((0, 0, 1, 2, 3))))
    line = kind + rng.choice(_JOB_TEXTS) + options + rng.choice(["", ","]) + ")"
    if rng.random() < 0.2:
        line += "\n" + job_attribute(rng)
    if rng.random() < 0.3:
        at = rng.randrange(len(line) + 1)
        line = line[:at] + "".join(rng.choice(JOB_PIECES) for _ in range(rng.randint(1, 3))) \
            + line[at:]
    return line


_JOB_NAMES = ['"welcome"', '"welcome"', '"welcome"', '"handler"', '"mial"', "name"]


def enqueue_call(rng: random.Random) -> str:
    call = (f"enqueue({rng.choice(['db', 'tx', 'db', 'tx', 'w'])}, {rng.choice(_JOB_NAMES)}, "
            f"{rng.choice(_PAYLOADS)})")
    if rng.random() < 0.3:
        at = rng.randrange(len(call) + 1)
        call = call[:at] + rng.choice(JOB_PIECES) + call[at:]
    return call


#: Attributes that are right, with the parameters their function takes.
_GOOD_ATTRIBUTES = [
    ('@job("handler", attempts=2, backoff="10ms", deadline="1s")', "db: Db, w: Welcome"),
    ('@job("a.b-c_1",)', "db: Db, w: Welcome"), ('@every("5m", deadline="30s")', "db: Db"),
    ('@every("1s")', "db: Db"), ('@cron("*/5 * * * mon")', "db: Db"),
    ('@cron("0 3 * * *", deadline="1h")', "db: Db")]


def job_program(rng: random.Random) -> str:
    """A program around a random attribute and a random enqueue call; one in four is right."""
    if rng.random() < 0.25:
        attribute, params = rng.choice(_GOOD_ATTRIBUTES)
        returns, body, define = "Result[unit, Error]", "return ok(())", "async def"
        name = rng.choice(["welcome", "a.b-c_1"] if "a.b-c_1" in attribute else ["welcome"])
        call = f"enqueue({rng.choice(['db', 'tx'])}, \"{name}\", w)"
    else:
        attribute = job_attribute(rng)
        params = rng.choice(["db: Db, w: Welcome", "db: Db"] * 3
                            + ["w: Welcome, db: Db", "db: Db, n: i64", ""])
        returns, body = rng.choice([("Result[unit, Error]", "return ok(())")] * 4
                                   + [("Result[i64, Error]", "return ok(1)"), ("unit", "pass")])
        define = rng.choice(["async def"] * 5 + ["def"])
        call = enqueue_call(rng)
    return ("class Welcome:\n    user: str\n\nclass Other:\n    n: i64\n\n"
            '@job("welcome")\nasync def welcome(db: Db, w: Welcome) -> Result[unit, Error]:\n'
            f"    return ok(())\n\n{attribute}\n{define} handler({params}) -> {returns}:\n"
            f"    {body}\n\n"
            "async def use(db: Db, tx: Tx, w: Welcome, name: str) -> Result[i64, Error]:\n"
            f"    return await {call}\n\ndef main():\n    pass\n")


@pytest.mark.fuzz
def test_jobs_and_schedules_never_raise(tmp_path: Path) -> None:
    """Random @job, @every and @cron attributes (good and bad texts, options and values, two
    roles, spliced-in pieces) above functions of random shapes, and random enqueue calls:
    each program checks or gives diagnostics with valid positions, never an exception."""
    rng = random.Random(SEED)
    target = tmp_path / "jobs.svc"
    rejected = 0
    for index in range(EXAMPLES):
        rejected += rejected_without_raising(target, job_program(rng).encode("utf-8"), index)
    assert 0 < rejected < EXAMPLES  # both good and bad programs were made


#: The pieces of random log calls' arguments (test_log_calls_never_raise).
_LOG_MESSAGES = ['"signed in"', '""', '"a\\nb"', "name", "n", "1", "fields", "None", "Some(name)",
                 'f"{n}"', "name + name"]
_LOG_FIELDS = ["fields", "Map()", "Map[str, str]()", "Map[str, i64]()", "counts", '"k=v"',
               "None", "[name]", "name", "get(nested, \"a\")"]


def log_call(rng: random.Random) -> str:
    """A log_info/log_warn/log_error call (or a misspelt one) with arguments of random
    kinds and number."""
    name = rng.choice(["log_info", "log_warn", "log_error"] * 4 + ["log_debug", "log_info[str]"])
    args = [rng.choice(_LOG_MESSAGES), rng.choice(_LOG_FIELDS)]
    shape = rng.random()
    if shape < 0.1:
        args = args[:1]
    elif shape < 0.2:
        args.append(rng.choice(_LOG_MESSAGES))
    elif shape < 0.25:
        args = []
    elif shape < 0.3:
        args = [f"message={args[0]}", f"fields={args[1]}"]
    text = f"{name}({', '.join(args)})"
    if rng.random() < 0.1:  # a statement's value used: log calls return unit
        text = rng.choice([f"x = {text}", f"return {text}", f"print({text})"])
    return text


@pytest.mark.fuzz
def test_log_calls_never_raise(tmp_path: Path) -> None:
    """A random log_info/log_warn/log_error call (arguments of every kind, too few and too many,
    keywords, the result used) in a handler, a plain function or main, beside right ones:
    each program checks or gives diagnostics with valid positions, never an exception."""
    rng = random.Random(SEED)
    target = tmp_path / "logs.svc"
    rejected = 0
    for index in range(EXAMPLES):
        calls = ["log_info(name, fields)", 'log_warn("w", fields)', "log_error(name, Map())"]
        calls[rng.randrange(3)] = log_call(rng)
        text = ('@get("/x/{name}")\nasync def x(name: str) -> Result[str, Error]:\n'
                "    let fields: Map[str, str] = Map()\n    set(fields, \"user\", name)\n"
                f"    {calls[0]}\n    return ok(name)\n\n"
                "def helper(n: i64, counts: Map[str, i64], nested: Map[str, Map[str, str]]):\n"
                f"    name = str(n)\n    fields = Map[str, str]()\n    {calls[1]}\n\n"
                "async def main() -> Result[unit, Error]:\n    name = \"m\"\n"
                f"    fields = Map[str, str]()\n    {calls[2]}\n    return ok(())\n")
        rejected += rejected_without_raising(target, text.encode("utf-8"), index)
    assert 0 < rejected < EXAMPLES  # both good and bad programs were made


#: Guards among the mutation snippets, and the pieces of random guarded programs
#: (test_guards_never_raise).
SNIPPETS += [b"@guard(", b"@guard(require_user)\n", b'guard("/admin", ', b'guard("/a", g)\n',
             b"require_user", b"Result[User, Error]"]
_GUARD_NAMES = ["require_user", "require_user", "require_admin", "check", "nobody", "main",
                "User", "", '"require_user"', "require_user, check"]
_GUARD_PREFIXES = ['"/admin"', '"/admin"', '"/"', '"/adm"', '"/admin/"', '"/x/{id}"', '""',
                   "admin", '"/admin", ']
_GUARD_SHAPES = [
    "async def require_user(h: Headers, db: Db) -> Result[User, Error]:\n"
    '    match header(h, "authorization"):\n'
    "        case Some(t): return ok(User(id=1))\n        case None: return unauthorized(\"no\")\n",
    "def require_user(h: Headers) -> Result[User, Error]:\n    return ok(User(id=1))\n",
    "def require_user(n: i64) -> Result[User, Error]:\n    return ok(User(id=n))\n",
    "def require_user(h: Headers) -> Result[i64, Error]:\n    return ok(1)\n",
    "def require_user(h: Headers) -> User:\n    return User(id=1)\n",
]
_ADMIN_SHAPES = [
    "def require_admin(u: User) -> Result[Admin, Error]:\n    return ok(Admin(id=u.id))\n",
    "async def require_admin(a: Admin) -> Result[unit, Error]:\n    return ok(())\n",
    "def require_admin(h: Headers, db: Db) -> Result[unit, Error]:\n    return forbidden(\"x\")\n",
]
_HANDLER_PARAMS = ["", "u: User", "a: Admin", "u: User, a: Admin", "n: Note", "u: User, n: Note",
                   "id: i64, u: User", "h: Headers, u: User", "db: Db"]


def guard_program(rng: random.Random) -> str:
    """Guard functions of random shapes, random prefix declarations and @guard attributes
    above handlers (and above a non-handler) asking for random guard values."""
    def pick(options: list[str], good: int) -> str:
        """One of `options`; in a clean program (half of them) one of the first `good`."""
        return rng.choice(options[:good] if clean else options)

    clean = rng.random() < 0.5
    parts = ["class User:\n    id: i64\n\nclass Admin:\n    id: i64\n\nclass Note:\n    t: str\n",
             pick(_GUARD_SHAPES, 2), pick(_ADMIN_SHAPES, 1),
             "def check(h: Headers) -> Result[unit, Error]:\n    return ok(())\n"]
    for _ in range(rng.randint(0, 2)):
        names = ", ".join(pick(_GUARD_NAMES, 3) for _ in range(rng.randint(not clean, 1)))
        parts.append(f"guard({pick(_GUARD_PREFIXES, 3)}{', ' if names else ''}{names})\n")
    for path in rng.sample(["/admin", "/admin/{id}", "/administrator", "/me", "/"], 3):
        attrs = "".join(f"@guard({pick(_GUARD_NAMES, 3)})\n"
                        for _ in range(rng.choice([0, 0, 1, 1, 2])))
        method = rng.choice(["get", "post"])
        params = pick(_HANDLER_PARAMS, 1)
        if "{id}" in path and "id:" not in params:
            params = "id: i64" + (", " + params if params else "")
        name = "h_" + "".join(c for c in path if c.isalnum())
        parts.append(f'{attrs}@{method}("{path}")\nasync def {name}({params}) -> '
                     "Result[unit, Error]:\n    return ok(())\n")
    if not clean and rng.random() < 0.2:
        parts.append("@guard(check)\nasync def helper() -> Result[unit, Error]:\n"
                     "    return ok(())\n")
    parts.append("async def main() -> Result[unit, Error]:\n    return ok(())\n")
    return "\n".join(parts)


@pytest.mark.fuzz
def test_guards_never_raise(tmp_path: Path) -> None:
    """Random guarded programs: each gives diagnostics with valid positions or checks, and a
    program that checks also generates and compiles (its guarded routes' functions)."""
    rng = random.Random(SEED)
    rejected_or_compiled(tmp_path / "guards.svc", (guard_program(rng) for _ in range(EXAMPLES)))


#: The outbound client among the mutation snippets, and the pieces of random calls
#: (test_outbound_calls_never_raise).
SNIPPETS += [b"http_get(", b'http_send("POST", ', b'http_stub("GET", ', b'"http://127.0.0.1/x"',
             b"headers_of([])", b"Response[str]"]
_OUTBOUND_METHODS = ['"GET"', '"POST"', '"FETCH"', '""', "method", "1", '"get"', "None"]
_OUTBOUND_URLS = ['"http://127.0.0.1:8001/x"', '"https://api.example/v1?q=1"', '"ftp://x"',
                  '"http://"', '"http://a b/"', '"http://h:99999/"', "url", 'f"{url}/x"', "1",
                  '"/relative"']
_OUTBOUND_HEADERS = ["headers_of([])", 'headers_of(["Accept: a"])', 'headers_of(["bad line"])',
                     "h", "[]", '"Accept: a"', "None"]
_OUTBOUND_BODIES = ['""', '"{}"', "json_encode(1)", "1", "text", "None"]


def outbound_call(rng: random.Random) -> str:
    """An http_get/http_send/http_stub call (or a misspelt one) with arguments of random
    kinds and number; every other one is right."""
    if rng.random() < 0.6:
        return rng.choice(["r = try await http_get(url, h)",
                           'x = await http_send(method, url + "/a", headers_of([]), text)',
                           'match await http_get(f"{url}/b", h):\n'
                           "        case Ok(a): print(body(a))\n"
                           "        case Err(e): print(error_message(e))"])
    name = rng.choice(["http_get", "http_send"] * 4 + ["http_stub", "http_post", "http_get[str]"])
    method, url = rng.choice(_OUTBOUND_METHODS), rng.choice(_OUTBOUND_URLS)
    headers, body = rng.choice(_OUTBOUND_HEADERS), rng.choice(_OUTBOUND_BODIES)
    args = {"http_get": [url, headers], "http_send": [method, url, headers, body],
            "http_stub": [method, url, rng.choice(["respond(200, \"x\")", "r", "1"])]}.get(
        name, [url, headers])
    shape = rng.random()
    if shape < 0.1:
        args = args[:-1]
    elif shape < 0.15:
        args.append(body)
    call = f"{name}({', '.join(args)})"
    return rng.choice([f"r = try await {call}", f"x = await {call}", call, f"r = {call}",
                       f"match await {call}:\n        case Ok(a): print(body(a))\n"
                       "        case Err(e): print(error_message(e))"])


@pytest.mark.fuzz
def test_outbound_calls_never_raise(tmp_path: Path) -> None:
    """Random outbound calls in a handler and in main: each program checks (and then also
    generates and compiles) or gives diagnostics with valid positions, never an exception."""
    rng = random.Random(SEED)

    def program() -> str:
        return ('@get("/x")\nasync def x(h: Headers) -> Result[str, Error]:\n'
                '    url = "http://127.0.0.1:8001"\n    method = "GET"\n    text = ""\n'
                f"    {outbound_call(rng)}\n    return ok(url)\n\n"
                "async def main() -> Result[unit, Error]:\n"
                '    url = "http://127.0.0.1:8001"\n    method = "PUT"\n    text = "{}"\n'
                '    h = headers_of([])\n    r = respond(200, "x")\n'
                f"    {outbound_call(rng)}\n    return ok(())\n")

    rejected_or_compiled(tmp_path / "outbound.svc", (program() for _ in range(EXAMPLES)))


#: The error makers of issue 24 and @patch among the mutation snippets, and the pieces of
#: random error answers (test_error_answers_never_raise).
SNIPPETS += [b'@patch("/x/{id}")\n', b"@patch(", b'unprocessable("r", ', b"too_many_requests(",
             b'with_header(', b'"WWW-Authenticate"', b"error_fields(e)", b'"Retry-After"']
_ERROR_RESULTS = ['unauthorized("no")', 'too_many_requests("slow", 5)', "too_many_requests(n, -1)",
                  'unprocessable("bad", reasons)', "unprocessable(n, Map())", "fail(e)", "ok(n)",
                  "r", "1", "e", "with_header(r, name, n)", 'error("x")', "None",
                  'too_many_requests("slow", n)', "unprocessable(reasons)"]
_HEADER_ARGS = ['"WWW-Authenticate"', '"Retry-After"', '"Bad Name"', '"content-type"', "name",
                '"X-A"', '"a\\nb"', "n", '"Bearer"', "1", "reasons"]


def error_answer(rng: random.Random) -> str:
    """A returned error maker, wrapped in with_header calls or not, with arguments of random
    kinds and number (or `error_fields` read back)."""
    result = rng.choice(_ERROR_RESULTS)
    for _ in range(rng.randrange(3)):
        args = [result, rng.choice(_HEADER_ARGS), rng.choice(_HEADER_ARGS)]
        if rng.random() < 0.1:
            args = args[:rng.randrange(3)]
        result = f"with_header({', '.join(args)})"
    if rng.random() < 0.15:
        return rng.choice(["x = error_fields(e)", "x = error_fields(n)", f"x = {result}",
                           "return ok(str(len(error_fields(e))))"])
    return f"return {result}"


@pytest.mark.fuzz
def test_error_answers_never_raise(tmp_path: Path) -> None:
    """Random error answers (unprocessable, too_many_requests, with_header, error_fields) in a
    PATCH handler and a helper: each program checks (and then also generates and compiles) or
    gives diagnostics with valid positions, never an exception."""
    rng = random.Random(SEED)

    def program() -> str:
        return ('@patch("/x/{name}")\nasync def x(name: str, h: Headers) -> Result[str, Error]:\n'
                '    n = "slow"\n    let reasons: Map[str, str] = Map()\n'
                '    set(reasons, "name", "must not be empty")\n'
                '    let r: Result[str, Error] = ok(name)\n'
                '    match r:\n        case Ok(v): pass\n        case Err(e):\n'
                f"            {error_answer(rng)}\n    {error_answer(rng)}\n\n"
                "def helper(e: Error, name: str) -> Result[str, Error]:\n"
                '    n = "1"\n    let reasons: Map[str, str] = Map()\n'
                '    let r: Result[str, Error] = fail(e)\n'
                f"    {error_answer(rng)}\n\n"
                "def main():\n    pass\n")

    rejected_or_compiled(tmp_path / "errors.svc", (program() for _ in range(EXAMPLES)))


#: Pieces of handler bodies for test_retry_verdicts_never_raise: statements that begin and end
#: transactions, write through the Db or the Tx, have effects, loop, call helpers (one of them
#: recursive), and broken ones.
_TX_LINES = [
    "tx = try await db_begin(db)", "try await db_commit(tx)", "try await db_rollback(tx)",
    'try await db_exec(tx, "UPDATE a SET n = 1")', 'try await db_exec(db, "UPDATE a SET n = 1")',
    'rows = try await db_all[A](db, "SELECT n FROM a")',
    'rows = try await db_all[A](db, "DELETE FROM a RETURNING n")',
    'try await enqueue(db, "later", A(n=1))', 'try await enqueue(tx, "later", A(n=1))',
    'print("x")', 'log_info("x", Map())', "try await helper(db)", "try await again(db, 2)",
    "for i in range(2):\n        tx = try await db_begin(db)", "await sleep(1)",
    "tx = try await db_begin(tx)", "try await db_commit(db)", "try await helper(tx)",
    "db_begin(db)", "try await db_begin()",
]
_TX_HELPERS = (
    "class A:\n    n: i64\n\n"
    '@job("later")\nasync def later(db: Db, a: A) -> Result[unit, Error]:\n    return ok(())\n\n'
    "async def helper(db: Db) -> Result[unit, Error]:\n"
    "    tx = try await db_begin(db)\n    try await db_commit(tx)\n    return ok(())\n\n"
    "async def again(db: Db, n: i64) -> Result[unit, Error]:\n"
    "    if n > 0:\n        try await again(db, n - 1)\n    return ok(())\n\n"
)
_EFFECT_MARKS = ("print(", "log_info(", 'db_exec(db, "UPDATE', "DELETE FROM", "enqueue(db,",
                 "again(", "for i in")


@pytest.mark.fuzz
def test_retry_verdicts_never_raise(tmp_path: Path) -> None:
    """Random handler bodies of transactions, writes, effects, loops and helper calls: each
    program checks or gives diagnostics, never an exception; one that checks is run again
    after a clash only if its body has none of the things a run again would repeat."""
    rng = random.Random(SEED)
    target = tmp_path / "ledger.svc"
    rejected = retried = 0
    for index in range(EXAMPLES):
        lines = [rng.choice(_TX_LINES) for _ in range(rng.randint(1, 5))]
        body = "".join(f"    {line}\n" for line in lines)
        text = (_TX_HELPERS + '@post("/t")\nasync def t(db: Db) -> Result[unit, Error]:\n'
                + body + "    return ok(())\n\nasync def main() -> Result[unit, Error]:\n"
                '    db = try await db_open(":memory:")\n    return await serve(db, 8080)\n')
        if rejected_without_raising(target, text.encode("utf-8"), index):
            rejected += 1
            continue
        checked = check(Target(file=str(target)))
        (route,) = checked.program.routes
        if route.retried:
            retried += 1
            assert not any(mark in body for mark in _EFFECT_MARKS), body
            assert body.count("db_begin(db)") + body.count("helper(") == 1, body
    assert 0 < rejected < EXAMPLES  # both good and bad programs were made
    assert retried > 0  # and some of the good ones are run again


#: Guards for chosen methods among the mutation snippets, and the pieces of random programs
#: of test_guard_methods_never_raise.
SNIPPETS += [b"methods=", b'methods=["POST", "DELETE"]', b', methods=["GET"])']
_METHOD_LISTS = ['["POST"]', '["POST", "PUT", "PATCH", "DELETE"]', '["GET"]', '["DELETE", "PUT"]',
                 "[]", '["post"]', '["HEAD"]', '["POST", "POST"]', "WRITES", '"POST"',
                 '["POST", m]', "[1]", '[["POST"]]']
_METHODS_PLACES = ["last", "last", "last", "first", "twice", "keyword"]


def guard_methods_program(rng: random.Random) -> str:
    """Prefix guards with `methods=` lists (good, misspelt, empty, computed), placed last or
    not, over routes of random methods and paths asking for the guard's value or not; half the
    programs are clean (good lists, placed last, a route of each method)."""
    clean = rng.random() < 0.5
    parts = ["class User:\n    id: i64\n\nWRITES: List[str] = [\"POST\"]\n",
             "def can_write(h: Headers) -> Result[User, Error]:\n    return ok(User(id=1))\n",
             "def check(h: Headers) -> Result[unit, Error]:\n    return ok(())\n"]
    prefixes = ['"/items"', '"/"'] if clean else rng.sample(['"/items"', '"/"', '"/other"'], 2)
    for prefix, guards in zip(prefixes, ["can_write", "check"]):
        methods = rng.choice(_METHOD_LISTS[:4] if clean else _METHOD_LISTS)
        place = "last" if clean else rng.choice(_METHODS_PLACES)
        guards = guards if clean else rng.choice(["can_write", "check", "can_write, check"])
        args = {"last": f"{guards}, methods={methods}", "first": f"methods={methods}, {guards}",
                "twice": f"{guards}, methods={methods}, methods={methods}",
                "keyword": f"{guards}, only={methods}"}[place]
        parts.append(f"guard({prefix}, {args})\n")
    routes = [("get", "/items"), ("post", "/items"), ("put", "/items/{id}"),
              ("delete", "/items/{id}")]
    if not clean:
        routes = [(rng.choice(["get", "post", "put", "delete"]), path)
                  for path in rng.sample(["/items", "/items/{id}", "/other", "/x"], 3)]
    for index, (method, path) in enumerate(routes):
        params = ("id: i64" if "{id}" in path else "") + rng.choice(["", ", u: User"] if not
                                                                    clean else [""])
        parts.append(f'@{method}("{path}")\nasync def h{index}({params.lstrip(", ")}) -> '
                     "Result[unit, Error]:\n    return ok(())\n")
    parts.append("async def main() -> Result[unit, Error]:\n    return ok(())\n")
    return "\n".join(parts)


@pytest.mark.fuzz
def test_guard_methods_never_raise(tmp_path: Path) -> None:
    """Random `guard(..., methods=[...])` programs: each gives diagnostics with valid positions
    or checks and compiles; in one that checks, a guard from a prefix with methods runs only on
    routes of those methods, and `svcc fmt` keeps the keyword (the laid-out text checks to the
    same guards)."""
    from svc.compiler.front.layout import format_text

    rng = random.Random(SEED)
    target = tmp_path / "methods.svc"
    programs = [guard_methods_program(rng) for _ in range(EXAMPLES)]
    rejected_or_compiled(target, iter(programs))
    for text in programs:
        target.write_text(text)
        checked = check(Target(file=str(target)))
        if isinstance(checked, Failed):
            continue
        guards = [(r.method, r.path, [(g.guard, g.methods) for g in r.guards])
                  for r in checked.program.routes]
        for method, _, uses in guards:
            assert all(not methods or method in methods for _, methods in uses), (text, guards)
        laid, _ = format_text(str(target), text)
        assert laid is not None and ("methods=" in laid) == ("methods=" in text)
        target.write_text(laid)
        again = check(Target(file=str(target)))
        assert not isinstance(again, Failed)
        assert [(r.method, r.path, [(g.guard, g.methods) for g in r.guards])
                for r in again.program.routes] == guards


#: Field rules, well and badly written, and the field types they may stand above.
_RULES = ["@length(1, 240)", "@length(0, 3)", "@length(5, 1)", "@length(-1, 2)", "@length(1)",
          "@length(x, 2)", "@range(1, 100)", "@range(-5, 5)", "@range(0.0, 1.5)",
          "@range(1, 3000000000)", "@range(1.5, 1)", '@pattern("[a-z]+")', '@pattern("(")',
          '@pattern("a", "b")', "@pattern(1)", '@one_of("a", "b")', "@one_of(1, 2)",
          '@one_of("a", "a")', "@one_of()", "@foo(1)", "@length", "@range(1, 2", "@",
          "@length(1, 2) x: str", '@one_of(True)', "@range(1 + 1, 3)"]
_RULE_TYPES = ["str", "str?", "bytes", "List[i64]", "List[Line]", "i64", "i32?", "f64", "bool",
               "Line", "Map[str, Line]", "Role"]


@pytest.mark.fuzz
def test_field_rules_never_raise(tmp_path: Path) -> None:
    """Random rules above random fields of a body class: each program gives diagnostics or,
    when it checks, generates and compiles (the rules' emitted tuples included)."""
    rng = random.Random(SEED)

    def programs() -> Iterator[str]:
        for _ in range(EXAMPLES):
            fields = ""
            for n in range(rng.randint(1, 4)):
                rules = [rng.choice(_RULES) for _ in range(rng.randint(0, 3))]
                fields += "".join(f"    {rule}\n" for rule in rules)
                fields += f"    f{n}: {rng.choice(_RULE_TYPES)}\n"
            yield ("enum Role: a, b\n\nclass Line:\n    @range(1, 100)\n    qty: i64\n\n"
                   f"class Body:\n{fields}\n"
                   '@post("/b")\nasync def b(body: Body) -> Result[unit, Error]:\n'
                   "    return ok(())\n\nasync def main() -> Result[unit, Error]:\n"
                   '    db = try await db_open(":memory:")\n    return await serve(db, 8080)\n')

    rejected_or_compiled(tmp_path / "rules.svc", programs())


#: Pieces for test_error_values_and_lenient_json_never_raise: error makers where an Error, an
#: Error?, a Result or nothing is expected, and lenient decoding of good and bad types.
_ERROR_MAKERS = ['error("a")', 'not_found("b")', 'conflict("c")', 'unauthorized("d")',
                 'forbidden("e")', 'internal_error("f")', 'too_many_requests("g", 3)',
                 'unprocessable("h", reasons)', "ok(1)", "fail(kept)", 'error(1)', "not_found()"]
_ERROR_PLACES = ["let e: Error = {}", "let e: Error? = {}", "e = {}", "let n: i64 = {}",
                 "let es: List[Error] = [{}]", "append(es, {})", "c = Holder(e={})",
                 "return fail({})", "return {}", "x = use({})", "set(by_name, \"k\", {})"]
_LENIENT_CALLS = ["json_decode_lenient[Answer](text)", "json_decode_lenient[List[Answer]](text)",
                  "json_decode_lenient[i64](text)", "json_decode_lenient[Error](text)",
                  "json_decode_lenient(text)", "json_decode_lenient[Answer](1)",
                  "json_decode_lenient[Answer, i64](text)", "json_decode_lenient[Answer?](text)"]


@pytest.mark.fuzz
def test_error_values_and_lenient_json_never_raise(tmp_path: Path) -> None:
    """Random error makers in random places (issue 35's errors as values) and random
    json_decode_lenient calls: each program checks (and then generates and compiles) or
    gives diagnostics with valid positions, never an exception."""
    rng = random.Random(SEED)

    def program() -> str:
        place = rng.choice(_ERROR_PLACES).format(rng.choice(_ERROR_MAKERS))
        lenient = rng.choice(["a = try {}", "let r: Result[Answer, Error] = {}", "x = {}"])
        return ("class Answer:\n    token: str\n\nclass Holder:\n    e: Error\n\n"
                "def use(e: Error) -> i64:\n    return 1\n\n"
                "def f(kept: Error, text: str) -> Result[i64, Error]:\n"
                "    let reasons: Map[str, str] = Map()\n    let es: List[Error] = []\n"
                "    let by_name: Map[str, Error] = Map()\n"
                f"    {lenient.format(rng.choice(_LENIENT_CALLS))}\n"
                f"    {place}\n    return ok(len(es))\n\ndef main():\n    pass\n")

    rejected_or_compiled(tmp_path / "errors.svc", (program() for _ in range(EXAMPLES)))


#: Python function declarations among the mutation snippets, and the pieces of random
#: declarations (test_python_functions_never_raise). The modules are a fixed few: the check
#: imports what a declaration names.
SNIPPETS += [b'@python("html", "escape")\n', b"@python(", b'error="invalid"', b"python_stub(",
             b'@python("textwrap", "shorten", error="invalid")\n']
_PY_MODULES = ['"html"', '"textwrap"', '"string"', '"os.path"', '"no_such_module_36"',
               '"bad name"', '""', "html", '"html.escape"']
_PY_ATTRIBUTES = ['"escape"', '"shorten"', '"ascii_letters"', '"join"', '"missing"',
                  '"TextWrapper.wrap"', '""', "escape"]
_PY_OPTIONS = ["", "", ', error="invalid"', ', error="not_fund"', ", error=3", ', err="x"',
               ', error="a", error="b"', ","]
_PY_TYPES = ["str", "i64", "f64", "bool", "bytes", "List[str]", "Map[str, i64]", "str?",
             "Note", "Mood", "i32", "Db", "Html", "Error", "unit"]


def python_declaration(rng: random.Random) -> str:
    """A `@python` declaration of random shape; every third one is right."""
    if rng.random() < 0.33:
        return ('@python("html", "escape", error="invalid")\n'
                "async def fn(text: str) -> Result[str, Error]\n")
    attribute = (f"@python({rng.choice(_PY_MODULES)}, {rng.choice(_PY_ATTRIBUTES)}"
                 f"{rng.choice(_PY_OPTIONS)})\n")
    params = ", ".join(f"p{i}: {rng.choice(_PY_TYPES)}" for i in range(rng.randint(0, 2)))
    returns = rng.choice([f"Result[{rng.choice(_PY_TYPES)}, Error]", "str", ""])
    arrow = f" -> {returns}" if returns else ""
    head = rng.choice(["async def", "async def", "def"])
    ending = rng.choice(["\n", "\n", ":\n    return ok(\"\")\n", " pass\n"])
    extra = rng.choice(["", "", '@get("/p")\n', "@guard(g)\n"])
    return extra + attribute + f"{head} fn({params}){arrow}{ending}"


@pytest.mark.fuzz
def test_python_functions_never_raise(tmp_path: Path) -> None:
    """Random `@python` declarations, calls of them and `python_stub` in a test file: each
    program checks (and then also generates and compiles) or gives diagnostics with valid
    positions, never an exception."""
    rng = random.Random(SEED)

    def program() -> str:
        call = rng.choice(['x = try await fn("a")', "x = await fn()", 'python_stub(fn, ok("a"))',
                           "python_stub(fn, ok(1))", 'python_stub("fn", ok(""))'])
        return ("enum Mood: calm, cross\nclass Note:\n    title: str\n\n"
                f"{python_declaration(rng)}\n"
                "async def test_it() -> Result[unit, Error]:\n"
                f"    {call}\n    return ok(())\n\n"
                "async def main() -> Result[unit, Error]:\n    return ok(())\n")

    rejected_or_compiled(tmp_path / "python_test.svc", (program() for _ in range(EXAMPLES)))


#: Uploads among the mutation snippets, and the pieces of random upload routes
#: (test_uploads_never_raise).
SNIPPETS += [b"Upload", b"Upload?", b'body_limit="10 MiB"', b"upload_move(", b"upload_read(f)"]
_UPLOAD_PARAMS = ["f: Upload", "f: Upload?", "f: Upload, g: Upload", "f: Upload, note: str?",
                  "f: Upload, n: Note", "f: Upload, raw: bytes", "f: List[Upload]", "n: Note", ""]
_BODY_LIMITS = ["", ', body_limit="10 MiB"', ', body_limit="1GiB"', ', body_limit="512 KiB"',
                ', body_limit="0 B"', ', body_limit="10 MB"', ", body_limit=5", ', limit="1 MiB"',
                ', body_limit="65 GiB"', ', body_limit="1 MiB", body_limit="2 MiB"']
_UPLOAD_USES = ["return ok(upload_size(f))", "return ok(len(try await upload_read(f)))",
                'try await upload_move(f, "/tmp/x")\n    return ok(1)',
                "return ok(len(upload_name(f) + upload_type(f) + await upload_sha256(f)))",
                "keep = Keep(file=f)\n    return ok(1)", "xs = [f]\n    return ok(1)",
                "return ok(upload_size(n))", "return ok(upload_size(None))",
                "return ok(upload_size(f, f))", "x = upload_move(f, 1)\n    return ok(1)"]


@pytest.mark.fuzz
def test_uploads_never_raise(tmp_path: Path) -> None:
    """Random upload routes (parameters, body limits, the upload builtins): each program checks
    (and then also generates and compiles) or gives diagnostics with valid positions."""
    rng = random.Random(SEED)

    def program() -> str:
        method = rng.choice(["post", "put", "get", "patch"])
        return ("class Note:\n    title: str\n\nclass Keep:\n    file: str\n\n"
                f'@{method}("/files"{rng.choice(_BODY_LIMITS)})\n'
                f"async def save({rng.choice(_UPLOAD_PARAMS)}) -> Result[i64, Error]:\n"
                f"    {rng.choice(_UPLOAD_USES)}\n\n"
                "async def main() -> Result[unit, Error]:\n    return ok(())\n")

    rejected_or_compiled(tmp_path / "uploads.svc", (program() for _ in range(EXAMPLES // 3)))


#: Topics and streams among the mutation snippets, and the pieces of random live routes
#: (test_live_routes_never_raise).
SNIPPETS += [b"Topic[Note]", b"Events[Note]", b"WebSocket[Note, Note]", b'topic("notes")',
             b"publish(db, NOTES, ", b"send_event(e, ", b"ws_receive(ws)"]
_TOPICS = ['NOTES: Topic[Note] = topic("notes")', 'NOTES: Topic[Note] = topic("")',
           'NOTES: Topic[Note] = "notes"', 'NOTES: Topic[Note?] = topic("n")',
           'NOTES: Topic[Html] = topic("n")', 'NOTES: Topic[Note, Note] = topic("n")',
           'NOTES: Topic[Note] = topic(NAME)', 'NOTES: Topic[Note] = topic("a", "b")',
           'NOTES: Topic[Note] = topic("a\\tb")', 'NOTES: Topic[i64] = topic("n")',
           'NOTES: Topic[Note] = topic("n")\n\nasync def sub(db: Db) -> '
           'Result[Subscription[Note], Error]:\n    return await subscribe(db, NOTES)',
           'NOTES: Topic[Note] = topic("n")\n\ndef keep(e: Events[Note]) -> '
           'Map[str, List[Events[Note]]]?:\n    return None']
_LIVE_PARAMS = ["db: Db, e: Events[Note]", "db: Db, ws: WebSocket[Note, Note]",
                "db: Db, ws: WebSocket[bytes, Note]", "db: Db, e: Events[Note], n: Note",
                "e: Events[Note], ws: WebSocket[Note, Note]", "db: Db, e: Events[Note]?",
                "db: Db, e: List[Events[Note]]", "db: Db", "db: Db, s: Subscription[Note]"]
_LIVE_USES = ["s = try await subscribe(db, NOTES)\n    match await receive(s):\n"
              "        case Some(n): send_event(e, n)\n        case None: pass",
              'send_event(e, Note(title="x"), "note", "1")', "send_event(e, 1)",
              "x = last_event_id(e)", "s = try await subscribe(db, NOTES)\n    ws_forward(ws, s)",
              "match await ws_receive(ws):\n        case Some(n): ok2 = await ws_send(ws, n)\n"
              "        case None: pass", 'ws_close(ws, 1000, "bye")', "ws_close(ws)",
              'try await publish(db, NOTES, Note(title="x"))', "try await publish(db, NOTES, 1)",
              'x = topic("elsewhere")', "try await publish(db, \"notes\", 1)",
              "s = await subscribe(db, NOTES)", "keep = Keep(file=e)"]


@pytest.mark.fuzz
def test_live_routes_never_raise(tmp_path: Path) -> None:
    """Random topics, event stream and WebSocket routes and their builtins: each program checks
    (and then also generates and compiles) or gives diagnostics with valid positions."""
    rng = random.Random(SEED)

    def program() -> str:
        method = rng.choice(["get", "get", "post"])
        returns = rng.choice(["unit", "unit", "Note"])
        return ("class Note:\n    title: str\n\nclass Keep:\n    file: str\n\n"
                f"NAME: str = \"n\"\n{rng.choice(_TOPICS)}\n\n"
                f'@{method}("/live")\n'
                f"async def live({rng.choice(_LIVE_PARAMS)}) -> Result[{returns}, Error]:\n"
                f"    {rng.choice(_LIVE_USES)}\n    return ok(())\n\n"
                "async def main() -> Result[unit, Error]:\n    return ok(())\n")

    rejected_or_compiled(tmp_path / "live.svc", (program() for _ in range(EXAMPLES // 3)))
