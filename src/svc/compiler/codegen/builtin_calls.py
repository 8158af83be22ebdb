"""Code generation for builtin calls, driven by the builtins' records (compiler/builtin_table.py).

Most builtins lower to a call of the runtime function their record names: `trim(s)` →
`_svc_stdlib.trim(s)`, `print(x)` → `_svc_print_(x)` (support functions are imported by name,
the other runtime modules as modules). A generic builtin's runtime function gets the type
argument first, as a run-time type (`db_all[Task](db, sql)` → `_svc_db.db_all(Task, db, sql)`).

The rest are the special forms below, each for a reason of its own: a Result is unboxed at
run time (`ok`, `fail`), a conversion to the type a value has already is nothing (`i64`,
`f64`), an Error's kind and message are attributes, `append` is the list's own method,
`include_text` is text read when compiling, `abs` has one function per type (the minimum
integer has no absolute value of its own type), `serve` and `test_request` also receive the
route list, and `header` reads a request's Headers or a Response by its argument's type.
"""

from __future__ import annotations

import ast
from typing import Callable, Protocol

from svc.compiler import builtin_table as B, svctypes as T
from svc.compiler.codegen.pyast import JOBS, ROUTES, SCHEDULES, SETTINGS, CodegenError
from svc.compiler.codegen.pyast import call as _call, name as _name
from svc.compiler.front import syntax
from svc.compiler.program import CheckedProgram


class Generator(Protocol):
    """What lowering a builtin call needs from the module being generated."""

    program: CheckedProgram

    def expr(self, e: syntax.Expr) -> ast.expr: ...

    def rt(self, name: str) -> ast.Name: ...

    def runtime(self, module: str, attr: str) -> ast.Attribute: ...

    def type_value(self, t: T.Type) -> ast.expr: ...

    def tx_scope(self) -> ast.Name:
        """The current function's list of the transactions it began; asking for it makes
        the function end them when it returns or fails."""


def lower(gen: Generator, e: syntax.Call) -> ast.expr:
    """The Python expression of a checked builtin call."""
    name = e.target or (e.func.id if isinstance(e.func, syntax.Name) else "")
    if name == B.RANGE:
        lowering: B.Lowering = B.RANGE_LOWERING
    elif name in B.BUILTINS:
        lowering = B.BUILTINS[name].lowering
    else:
        raise CodegenError(f"unknown builtin {name!r}")
    args = [gen.expr(a) for a in e.args]
    if name in B.BUILTINS and B.BUILTINS[name].variadic == B.DB_ARG:
        args = _sql_arguments(gen, e, args)
    if isinstance(lowering, B.RuntimeCall):
        return runtime_call(gen, lowering, e, args)
    form = SPECIAL_FORMS.get(lowering)
    if form is None:
        raise CodegenError(f"no code generation for the special form {lowering.name!r}")
    return form(gen, e, args)


#: The runtime class (svc.runtime.db.args) a List argument of db_exec, db_all or db_one is
#: wrapped in, by its element type: it carries the values and their PostgreSQL type (a List
#: of an enum is a TextList: a member is its name).
_SQL_LISTS: dict[T.Type, str] = {T.I64: "IntList", T.I32: "IntList", T.F64: "FloatList",
                                 T.BOOL: "BoolList", T.STR: "TextList"}


def _sql_arguments(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> list[ast.expr]:
    """The arguments with each List wrapped in its runtime class (its values in `col IN (?n)`,
    a JSON value elsewhere), and each other List, Map or class in `Json`/`JsonList` (a JSON
    value); `T?` of those through `optional`, so that None stays NULL. Scalars and enums (a
    member is its name, a str) go as they are, so calls without these cost nothing more."""
    wrapped = list(args)
    for i, arg in enumerate(e.args):
        t = arg.type
        inner = t.inner if isinstance(t, T.Opt) else t
        if inner is None or T.db_kind(inner) != "json":
            continue
        more: list[ast.expr] = []
        if T.is_db_list(inner):
            assert isinstance(inner, T.ListOf)
            cls = "TextList" if isinstance(inner.elem, T.EnumRef) else _SQL_LISTS[inner.elem]
        else:
            cls = "JsonList" if isinstance(inner, T.ListOf) else "Json"
            if _holds_map(gen, inner, set()):  # its keys go in jsonb's order (args.py)
                more = [ast.Constant(True)]
        if isinstance(t, T.Opt):
            wrapped[i] = _call(gen.runtime("db", "optional"),
                               [gen.runtime("db", cls), args[i]] + more)
        else:
            wrapped[i] = _call(gen.runtime("db", cls), [args[i]] + more)
    return wrapped


def _holds_map(gen: Generator, t: T.Type, seen: set[str]) -> bool:
    """Whether a Map occurs anywhere in values of `t` (through Lists, `T?` and class fields)."""
    if isinstance(t, T.MapOf):
        return True
    if isinstance(t, (T.ListOf, T.Opt)):
        return _holds_map(gen, t.elem if isinstance(t, T.ListOf) else t.inner, seen)
    if isinstance(t, T.ClassRef) and t.name not in seen:
        seen.add(t.name)
        info = gen.program.classes.get(t.name)
        return info is not None and any(_holds_map(gen, ft, seen) for _, ft in info.fields)
    return False


def _row_type(gen: Generator, name: str, t: T.Type) -> ast.expr:
    """The run-time type argument of db_all[T] or db_one[T]: the class, or for a scalar or an
    enum the description of the single column (svc.runtime.db.rows), a constant:
    ("db_all[i64]", "i64", optional[, "enum", members]). db_one's value may be NULL (None)."""
    if isinstance(t, T.ClassRef):
        return gen.type_value(t)
    inner = t.inner if isinstance(t, T.Opt) else t
    optional = isinstance(t, T.Opt) or name == "db_one"
    entry: tuple = (f"{name}[{T.format_type(t)}]", T.format_type(inner), optional)
    if isinstance(inner, T.EnumRef):
        entry += ("enum", inner.members)
    return ast.Constant(entry)  # type: ignore[arg-type]  # a tuple of constants is one


def runtime_call(gen: Generator, target: B.RuntimeCall, e: syntax.Call,
                 args: list[ast.expr]) -> ast.expr:
    """`function(type argument, arguments, call site)`, as the record says."""
    if target.module == "lib.support":
        function: ast.expr = gen.rt(target.function)
    else:
        function = gen.runtime(target.module, target.function)
    name = e.target or (e.func.id if isinstance(e.func, syntax.Name) else "")
    if name in B.BUILTINS and B.BUILTINS[name].type_param == B.ROW_CLASS:
        type_args = [_row_type(gen, name, t) for t in e.type_arg_types]
    else:
        type_args = [gen.type_value(t) for t in e.type_arg_types]
    site = [ast.Constant(f"{e.span.file}:{e.span.line}")] if target.call_site else []
    scope = [gen.tx_scope()] if target.tx_scope else []
    return _call(function, type_args + args + site + scope)


def _unboxed(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`ok(x)` is x, `fail(e)` is e: a Result is its value or its SvcError at run time."""
    return args[0] if args else ast.Constant(None)


def _number_conversion(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`i64(x)`: an i64 or i32 is already one (Python ints), an f64 is truncated and checked;
    `f64(x)`: nothing for an f64, a float of an integer."""
    arg_type = e.args[0].type
    if e.target == "i64":
        return _call(gen.rt("to_i64"), args) if arg_type == T.F64 else args[0]
    return args[0] if arg_type == T.F64 else _call(gen.rt("to_f64"), args)


def _error_field(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`error_kind(e)` is `e.kind`, `error_message(e)` `e.message`."""
    return ast.Attribute(value=args[0], attr=(e.target or "").removeprefix("error_"),
                         ctx=ast.Load())


def _list_append(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    return _call(ast.Attribute(value=args[0], attr="append", ctx=ast.Load()), args[1:])


def _embedded_text(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """The checker read the file: its text is a constant of the program."""
    return ast.Constant(e.embedded_text if e.embedded_text is not None else "")


_ABS: dict[T.Type, str] = {T.I64: "abs64", T.I32: "abs32", T.F64: "absf"}


def _abs_by_type(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    arg_type = e.args[0].type
    if arg_type is None or arg_type not in _ABS:
        raise CodegenError(f"abs of a {arg_type}")
    return _call(gen.runtime("lib.stdlib", _ABS[arg_type]), args)


#: The builtins that also get tables of the entry module: the function each calls, and which.
_TABLE_USERS = {"serve": ("http.server", "serve", (ROUTES, JOBS, SCHEDULES, SETTINGS)),
                "test_request": ("http.test_client", "test_request", (ROUTES, SETTINGS)),
                "run_jobs": ("background.jobs", "run_jobs", (JOBS, SETTINGS)),
                "run_jobs_now": ("background.jobs", "run_jobs_now", (JOBS, SETTINGS))}


def _with_routes(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`serve(db, port)` also gets the entry module's route, job and schedule tables and its
    settings (svc.rules.settings); `test_request(...)` its routes and settings, `run_jobs(db)`
    and `run_jobs_now(db)` its jobs and settings."""
    module, function, tables = _TABLE_USERS[e.target or ""]
    return _call(gen.runtime(module, function), args + [_name(t) for t in tables])


def _enqueue_job(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`enqueue(db, "name", payload)`: the job's attempts and deadline go with the row, so any
    runner (of any version of the program) knows them."""
    job = gen.program.jobs.get(getattr(e.args[1], "value", ""))
    if job is None:
        raise CodegenError("enqueue of a job the checker did not find")
    return _call(gen.runtime("background.jobs", "enqueue"),
                 args + [ast.Constant(job.attempts), ast.Constant(job.deadline_ms)])


def _migrate(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`db_migrate(db, steps)` applies `steps`; `db_migrate(db)` the declared migrations, whose
    texts are embedded here, per dialect (the runtime picks the database's)."""
    if len(args) == 2:
        return _call(gen.runtime("db", "db_migrate"), args)
    declared = ast.Dict(
        keys=[ast.Constant(dialect) for dialect in gen.program.migrations],
        values=[ast.Tuple([ast.Constant(step.text) for step in steps], ast.Load())
                for steps in gen.program.migrations.values()])
    return _call(gen.runtime("db", "db_migrate_declared"), args + [declared])


def _header_by_type(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`header(h, name)` reads a request's Headers; `header(r, name)` a Response's fields."""
    if isinstance(e.args[0].type, T.ResponseOf):
        return _call(gen.runtime("http.test_client", "response_header"), args)
    return _call(gen.runtime("http.headers", "header"), args)


def _python_stub(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`python_stub(f, answer)`: the runtime keeps stubs by the function's svc name."""
    name = e.args[0].id if isinstance(e.args[0], syntax.Name) else ""
    return _call(gen.runtime("lib.python_calls", "python_stub"), [ast.Constant(name), args[1]])


def _topic_name_value(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`topic("name")`: a topic is its name at run time (checked when compiling)."""
    return args[0]


def _with_message_type(gen: Generator, e: syntax.Call, args: list[ast.expr]) -> ast.expr:
    """`receive(s)` → `live.receive(T, s)`, `ws_receive(ws)` → `live.ws_receive(In, ws)`: the
    runtime decodes each message's JSON into the type the checker gave the call (its T?)."""
    result = e.type
    message = result.inner if isinstance(result, T.Opt) else result
    if message is None:
        raise CodegenError(f"{e.target} without a checked message type")
    return _call(gen.runtime("lib.live", e.target or ""), [gen.type_value(message)] + args)


SPECIAL_FORMS: dict[B.SpecialForm,
                    Callable[[Generator, syntax.Call, list[ast.expr]], ast.expr]] = {
    B.UNBOXED: _unboxed,
    B.NUMBER_CONVERSION: _number_conversion,
    B.ERROR_FIELD: _error_field,
    B.LIST_APPEND: _list_append,
    B.EMBEDDED_TEXT: _embedded_text,
    B.ABS_BY_TYPE: _abs_by_type,
    B.WITH_ROUTES: _with_routes,
    B.HEADER_BY_TYPE: _header_by_type,
    B.ENQUEUE_JOB: _enqueue_job,
    B.MIGRATE: _migrate,
    B.TOPIC_NAME_VALUE: _topic_name_value,
    B.WITH_MESSAGE_TYPE: _with_message_type,
    B.PYTHON_STUB: _python_stub,
}
