"""Checking calls: of functions, of class constructors (keywords only) and of builtins.

A call is resolved by name (a local variable, then a declaration, then a builtin) and gets the
annotations the code generator relies on: `call_kind`, `target`, and for generic builtins the
checked type argument. Context typing reaches calls too: `ok(v)` and `error(..)` take their
Result type from the `expected` type (where an Error is expected, an error maker makes the Error
itself). `await` is checked here because it applies only to a
call of an async function or builtin.
"""

from __future__ import annotations

import os

from svc.compiler import builtin_table as B
from svc.compiler.check import config_class, generics, maps, http_types as check_http
from svc.compiler.check import db_types, live_types, regex_patterns
from svc.compiler.check.context import suggest
from svc.compiler.check.includes import include_problem
from svc.compiler.check.some import SOME, some_call
from svc.compiler.check.expressions import (
    VIEW_BYTES, ExpressionChecker, constant_root, field_name_span, fmt,
)
from svc.compiler.front import syntax
from svc.compiler.source import Span
from svc.compiler.svctypes import (
    BOOL, BYTES, DB, ERROR, I32, NONE, NUMBERS, STR, TX, UNKNOWN, ClassRef, EnumRef, ListOf,
    MapOf, Opt, ResultOf, Type, is_json_type,
)
from svc.compiler.svctypes import HEADERS, ResponseOf


#: Builtins that change their first argument in place (a constant's use is a copy).
CHANGES_FIRST_ARGUMENT = frozenset({"append", "set"})


class CallChecker(ExpressionChecker):
    """Calls and `await`, on top of the expression checker."""

    def e_Await(self, e: syntax.Await, expected) -> Type:
        if not self.fn.is_async:
            self.error(f"await outside an async def: '{self.fn.name}' is not async", e.span)
        if not isinstance(e.value, syntax.Call):
            t = self.expr(e.value, expected)
            if t != UNKNOWN:
                self.error("await needs a call of an async function", e.value.span)
            return UNKNOWN
        t = self.call(e.value, expected, awaited=True)
        e.value.type = t
        call = e.value
        builtin = B.BUILTINS.get(call.target or "") if call.call_kind == "builtin" else None
        is_async = call.call_kind == "async_function" or (builtin is not None and builtin.is_async)
        if call.call_kind is not None and not is_async:
            self.error(f"await needs an async call; '{call.target}' is not async", e.span)
        return t

    def e_Call(self, e: syntax.Call, expected) -> Type:
        return self.call(e, expected, awaited=False)

    def call(self, call: syntax.Call, expected: Type | None, awaited: bool) -> Type:
        func = call.func
        if isinstance(func, syntax.Attribute):  # `xs.append(1)`: one message, not two
            t = self.expr(func.value)
            if func.attr in B.BUILTINS or self.ctx.lookup(func.attr, self.file):
                fix = f"write {func.attr}(x, ...) instead of x.{func.attr}(...)"
            else:
                fix = f"'{func.attr}' cannot be called on {fmt(t)}"
            self.error(f"svc has no methods: {fix}", func.span)
            return self.skip_args(call)
        if not isinstance(func, syntax.Name):
            self.expr(func)
            self.error("only a function, class or builtin can be called (by name)", func.span)
            return self.skip_args(call)
        name = func.id
        local = self.lookup(name)
        if local is not None:
            func.ref, func.type = "local", local
            self.refer_local(name, func.span)
            self.error(f"'{name}' is a variable of type {fmt(local)}, not a function", func.span)
            return self.skip_args(call)
        d = self.ctx.lookup(name, self.file)
        if d is not None:
            self.ctx.refer(func.span, d.decl.name_span)
        if d is not None and d.kind == "class":
            func.ref = "class"
            return self.construct(call, name, expected)
        if d is not None and isinstance(d.decl, syntax.EnumDef):
            members = ", ".join(f"{name}.{m}" for m in d.decl.members[:2])
            self.error(f"'{name}' is an enum and cannot be called: write one of its members "
                       f"({members}, ...)", func.span)
            return self.skip_args(call)
        if d is not None and d.kind == "const":
            self.error(f"'{name}' is a constant, not a function: write {name} without ()",
                       func.span)
            return self.skip_args(call)
        if d is not None:
            func.ref = "function"
            return self.call_function(call, self.ctx.program.functions[name], awaited)
        if name == maps.MAP and d is None:
            return maps.construct(self, call, expected)
        if name in B.BUILTINS:
            func.ref = "builtin"
            return self.call_builtin(call, B.BUILTINS[name], expected, awaited)
        if name == SOME and d is None:
            return some_call(self, call, expected)
        if name == B.RANGE:
            func.ref = "builtin"
            self.error("range(...) can only be the iterable of a for loop", call.span)
            return self.skip_args(call)
        self.unknown_name(name, func.span)
        return self.skip_args(call)

    def skip_args(self, call: syntax.Call, keywords: bool = True) -> Type:
        """Check the arguments of a call that already failed, for their own errors
        (`keywords=False`: the keywords' values were checked already)."""
        for arg in call.args:
            self.expr(arg)
        for kw in call.keywords if keywords else ():
            self.expr(kw.value)
        return UNKNOWN

    def no_keywords_or_type_args(self, call: syntax.Call, what: str) -> None:
        if call.keywords:
            self.error(f"{what} takes positional arguments only", call.keywords[0].span)
            for kw in call.keywords:
                self.expr(kw.value)
        if call.type_args:
            self.error(f"{what} takes no type arguments", call.type_args[0].span)

    def arity(self, call: syntax.Call, what: str, count: int, variadic: bool = False,
              fewest: int | None = None) -> bool:
        found = len(call.args)
        if call.keywords:  # already reported as "positional arguments only"
            return False
        if found == count or (variadic and found > count) or \
                (fewest is not None and fewest <= found <= count):
            return True
        plural = "argument" if count == 1 else "arguments"
        least = "at least " if variadic else f"{fewest} or " if fewest is not None else ""
        self.error(f"{what} takes {least}{count} {plural}, found {found}", call.span)
        return False

    def call_function(self, call: syntax.Call, info, awaited: bool) -> Type:
        call.call_kind = "async_function" if info.is_async else "function"
        call.target = info.name
        what = f"function '{info.name}'"
        self.no_keywords_or_type_args(call, what)
        if not self.arity(call, what, len(info.params)):
            # One mistake, one message: arguments out of place are not also "expected X".
            self.skip_args(call, keywords=False)
            return info.returns
        for i, arg in enumerate(call.args):
            self.expect(arg, info.params[i][1], f"argument {i + 1} of '{info.name}': ")
        if info.is_async and not awaited:
            self.error(f"'{info.name}' is async: call it with await {info.name}(...)", call.span)
        return info.returns

    def construct(self, call: syntax.Call, name: str, expected: Type | None = None) -> Type:
        decl = self.ctx.definitions[name].decl
        if isinstance(decl, syntax.ClassDef) and decl.type_params:
            instance = self.instance_to_construct(call, decl, expected)
            if instance is None:
                return self.skip_args(call)
            name = instance
        call.call_kind, call.target = "class", name
        info = self.ctx.program.classes[name]
        fields = dict(info.fields)
        if call.args:
            self.error(f"class {name} is built with keywords only: "
                       f"{name}({', '.join(f + '=...' for f in fields)})", call.args[0].span)
            for arg in call.args:
                self.expr(arg)
        if call.type_args and not info.decl.type_params:
            self.error(f"class {name} takes no type arguments", call.type_args[0].span)
        given: set[str] = set()
        unknown = False
        for kw in call.keywords:
            span = Span(kw.span.file, kw.span.line, kw.span.col, kw.span.line,
                        kw.span.col + len(kw.name))
            if kw.name not in fields:
                hint = suggest(kw.name, fields)
                self.error(f"unknown field '{kw.name}' in class {name}{hint}", span)
                self.expr(kw.value)
                unknown = True
            elif kw.name in given:
                self.error(f"field '{kw.name}' is given twice", span)
                self.expr(kw.value)
            else:
                self.ctx.refer(span, field_name_span(info, kw.name))
                self.expect(kw.value, fields[kw.name], f"field '{kw.name}' of {name}: ")
            given.add(kw.name)
        missing = [f for f in fields if f not in given]
        if missing and not unknown and not call.args:  # one mistake, one message
            listed = ", ".join(f"'{f}'" for f in missing)
            self.error(f"missing field{'s' if len(missing) > 1 else ''} {listed} in {name}(...)",
                       call.func.span)
        return ClassRef(name)

    def instance_to_construct(self, call: syntax.Call, decl: syntax.ClassDef,
                              expected: Type | None) -> str | None:
        """The instantiation `Page[Task](...)` builds: its written type arguments, or the
        context's (`return Page(items=xs, next=None)` in a function returning Page[Task])."""
        if call.type_args:
            texpr = syntax.NamedType(call.func.span.to(call.type_args[-1].span), decl.name,
                                     call.type_args)
            t = self.ctx.resolve_type(texpr, self.file)
        else:
            want = expected.inner if isinstance(expected, Opt) else expected
            if isinstance(want, ClassRef) and want.name.startswith(decl.name + "["):
                return want.name
            if want == UNKNOWN:  # the context's type was wrong, and reported
                return None
            self.error(f"class {decl.name} is generic: write {generics.usage(decl)}(...) with "
                       "its type arguments", call.func.span)
            return None
        return t.name if isinstance(t, ClassRef) else None

    # --- builtins ----------------------------------------------------------------------------

    def call_builtin(self, call: syntax.Call, b: B.Builtin, expected, awaited: bool) -> Type:
        call.call_kind, call.target = "builtin", b.name
        if b.name == "topic":  # only a topic constant's value (constants.py checks that one)
            return live_types.topic_outside_constant(self, call)
        if isinstance(expected, Opt) and isinstance(expected.inner, ResultOf):
            expected = expected.inner  # ok(...) where a Result[T, Error]? is expected: a T
        type_arg = self.type_argument(call, b)
        if call.keywords:
            self.error(f"{b.name} takes positional arguments only", call.keywords[0].span)
            for kw in call.keywords:
                self.expr(kw.value)
        if not self.arity(call, b.name, len(b.params), b.variadic is not None, b.fewest):
            self.skip_args(call, keywords=False)  # one mistake, one message
            return b.returns if isinstance(b.returns, Type) else UNKNOWN
        arg_types: list[Type] = []
        for i, arg in enumerate(call.args):
            spec = b.params[i] if i < len(b.params) else b.variadic
            if spec is None:
                self.expr(arg)
            elif spec == B.OK_VALUE:
                ok_type = expected.ok if isinstance(expected, ResultOf) else None
                if ok_type is None:
                    self.expr(arg)
                else:
                    self.expect(arg, ok_type, "argument of ok: ")
            elif spec == B.RESPONSE_BODY:
                arg_types.append(check_http.response_body(self, arg, expected))
            elif spec == B.RESULT_ARG:
                arg_types.append(self.result_argument(b, arg, expected))
            else:
                arg_types.append(self.argument(call, b, i, arg, spec, arg_types))
        if b.is_async and not awaited:
            self.error(f"'{b.name}' is async: call it with await {b.name}(...)", call.span)
        if b.name in CHANGES_FIRST_ARGUMENT and call.args:
            self.refuse_changing_constant(b.name, call.args[0])
        if b.name in check_http.LITERAL_CHECKED:
            check_http.check_literals(self, call)
        live_types.check_close_code(self, call)
        if b.test_only:
            check_http.check_test_only(self, call)
        return self.builtin_result(call, b, expected, type_arg, arg_types)

    def result_argument(self, b: B.Builtin, arg: syntax.Expr, expected) -> Type:
        """A Result argument (`with_header`): of the Result type the context expects, so an
        error maker written in it knows its type; else any Result[T, Error]."""
        if isinstance(expected, ResultOf):
            self.expect(arg, expected, f"argument 1 of {b.name}: ")
            return expected
        t = self.expr(arg, None)
        if not isinstance(t, ResultOf) and t != UNKNOWN:
            self.error(f"argument 1 of {b.name}: expected {B.KIND_TEXT[B.RESULT_ARG]}, "
                       f"found {fmt(t)}", arg.span)
            return UNKNOWN
        return t

    def refuse_changing_constant(self, builtin: str, arg: syntax.Expr) -> None:
        """`append(LIMITS, 4)` would change a copy of the constant and lose it: refused."""
        name = constant_root(arg)
        if name is not None:
            self.error(f"{builtin} cannot change constant '{name}'; a variable set from it "
                       f"holds a copy that can change (v = {name})", arg.span)

    def builtin_result(self, call, b: B.Builtin, expected, type_arg, arg_types) -> Type:
        r = b.returns
        if r == B.ERROR_OR_RESULT and expected in (ERROR, Opt(ERROR)):
            return ERROR  # an error value kept for later (`fail(e)`): the same run-time value
        if r in (B.FROM_CONTEXT, B.ERROR_OR_RESULT):
            return self.result_from_context(call, b, expected)
        if r == B.SAME_AS_ARG:
            return arg_types[0] if arg_types else UNKNOWN
        if r == B.OPT_OF_MAP_VALUE:
            m = arg_types[0] if arg_types else UNKNOWN
            return Opt(m.value) if isinstance(m, MapOf) else UNKNOWN
        if r == B.RESPONSE_OF_BODY:
            return check_http.response_of(arg_types)
        if r == B.TYPE_ARG:
            return type_arg if type_arg is not None else UNKNOWN
        live = live_types.result_of(r, arg_types) if isinstance(r, str) else None
        if live is not None:
            return live
        if r == B.BODY_OF_RESPONSE:
            return arg_types[0].body if arg_types and isinstance(arg_types[0], ResponseOf) \
                else UNKNOWN
        if type_arg is None and r in (B.RESULT_OF_TYPE_ARG, B.RESULT_LIST_OF_TYPE_ARG,
                                      B.RESULT_OPT_OF_TYPE_ARG):
            return UNKNOWN
        if r == B.RESULT_OF_TYPE_ARG:
            return ResultOf(type_arg)
        if r == B.RESULT_LIST_OF_TYPE_ARG:
            return ResultOf(ListOf(type_arg))
        if r == B.RESULT_OPT_OF_TYPE_ARG:
            return ResultOf(Opt(type_arg))
        assert isinstance(r, Type), f"{b.name}: unknown result rule {r!r}"
        return r

    def result_from_context(self, call: syntax.Call, b: B.Builtin, expected) -> Type:
        """`ok(..)`, `fail(..)` and the error makers make the Result type the context
        expects; without one, there is no telling which (an error maker may make an Error)."""
        if isinstance(expected, ResultOf):
            return expected
        wanted = "Result or Error" if b.returns == B.ERROR_OR_RESULT else "Result"
        if expected is None:
            self.error(f"cannot tell which Result type {b.name}(...) makes here; use it in a "
                       f"return, an argument or a let with a declared {wanted} type", call.span)
        elif expected != UNKNOWN:
            self.error(f"{b.name}(...) makes a {wanted}, but {fmt(expected)} is expected",
                       call.span)
        return UNKNOWN

    def type_argument(self, call: syntax.Call, b: B.Builtin) -> Type | None:
        """The checked type argument of a generic builtin (None when absent or invalid)."""
        if b.type_param is None:
            if call.type_args:
                self.error(f"{b.name} takes no type arguments", call.type_args[0].span)
            return None
        if len(call.type_args) != 1:
            found = len(call.type_args)
            self.error(f"{b.name} needs one type argument, e.g. {b.name}[Task](...), found "
                       f"{found}", call.type_args[1].span if found > 1 else call.func.span)
            return None
        texpr = call.type_args[0]
        t = self.ctx.resolve_type(texpr, self.file)
        call.type_arg_types = [t]
        if t == UNKNOWN:
            return None
        if b.type_param == B.ROW_CLASS:
            problem = db_types.row_type_problem(b.name, t, self.ctx.program.classes,
                                                self.ctx.field_types)
            if problem:
                self.error(problem, texpr.span)
                return None
        elif b.type_param == B.CONFIG_CLASS:
            problem = config_class.class_problem(self.ctx.program, t)
            if problem:
                self.error(f"{config_class.RULE}; {problem}", texpr.span)
                return None
            if isinstance(t, ClassRef):  # always, once class_problem found none
                self.ctx.program.config_classes.setdefault(t.name, None)
        elif not is_json_type(t, self.ctx.field_types):
            self.error(f"{b.name}[T] needs a JSON type (class, List, number, str, bool, T?), "
                       f"found {fmt(t)}", texpr.span)
            return None
        return t

    def argument(self, call: syntax.Call, b: B.Builtin, i: int, arg: syntax.Expr, spec,
                 earlier) -> Type:
        """Check argument `i` of a builtin call against a type or a kind of types."""
        what = f"argument {i + 1} of {b.name}: "
        if isinstance(spec, Type):
            return self.expect(arg, spec, what)
        if spec == B.ELEMENT:
            lst = earlier[0] if earlier else UNKNOWN
            return self.expect(arg, lst.elem if isinstance(lst, ListOf) else UNKNOWN, what)
        if spec == B.SAME_AS_FIRST:
            return self.expect(arg, earlier[0] if earlier else UNKNOWN, what)
        if spec == B.MAP_VALUE:
            m = earlier[0] if earlier else UNKNOWN
            return self.expect(arg, m.value if isinstance(m, MapOf) else UNKNOWN, what)
        if spec == B.PART:  # `contains`: a str in a str, an element in a List
            first = earlier[0] if earlier else UNKNOWN
            want = first.elem if isinstance(first, ListOf) else \
                STR if first == STR or isinstance(first, MapOf) else UNKNOWN
            return self.expect(arg, want, what)
        if spec == B.LITERAL_PATH:
            return self.include_text(call, arg)
        if spec == B.LITERAL_JOB:
            return self.job_name(arg)
        if spec == B.JOB_PAYLOAD:
            job = self.ctx.program.jobs.get(getattr(call.args[1], "value", ""))
            return self.expect(arg, job.payload if job is not None else UNKNOWN, what)
        if spec == B.LITERAL_PATTERN:
            return regex_patterns.pattern_argument(self, call, arg)
        if spec == B.PYTHON_FUNCTION:
            return self.python_function_name(arg)
        if spec == B.PYTHON_ANSWER:
            return self.expect(arg, earlier[0] if earlier else UNKNOWN, what)
        wanted = live_types.expected_argument(spec, earlier)
        if wanted is not None:
            return self.expect(arg, wanted, what)
        t = self.expr(arg, self.literal_hint(call, b, i, spec))
        if t != UNKNOWN and not self.fits_kind(t, spec):
            hint = db_types.argument_hint(t, self.ctx.program.classes) if spec == B.DB_ARG \
                else ""
            self.error(f"{what}expected {B.KIND_TEXT[spec]}, found {fmt(t)}{hint}", arg.span)
            return UNKNOWN  # a result derived from it (`sorted`, `min`) would only mislead
        return t

    def literal_hint(self, call: syntax.Call, b: B.Builtin, i: int, spec) -> Type | None:
        """`max(0, n)` with `n: i32`: the literal takes the type of the variable after it (the
        second argument is checked against the first's type, so the first must be i32)."""
        if spec != B.INTEGER_OR_FLOAT or i != 0 or len(call.args) < 2:
            return None
        other = call.args[1]
        if len(b.params) > 1 and b.params[1] == B.SAME_AS_FIRST and isinstance(other, syntax.Name):
            t = self.lookup(other.id)
            return t if t == I32 else None
        return None

    def fits_kind(self, t: Type, kind: str) -> bool:
        if kind == B.INTEGER_OR_FLOAT:
            return t in NUMBERS
        if kind == B.FORMATTABLE:
            return t in NUMBERS or t == BOOL or isinstance(t, EnumRef)
        if kind == B.SIZED:
            return t in (STR, BYTES, VIEW_BYTES) or isinstance(t, (ListOf, MapOf))
        if kind == B.MAP:
            return isinstance(t, MapOf)
        if kind == B.LIST:
            return isinstance(t, ListOf)
        if kind == B.JSON:
            return is_json_type(t, self.ctx.field_types)
        if kind == B.TEXT:
            return t in (STR, BYTES, VIEW_BYTES)
        if kind == B.STR_OR_LIST:
            return t == STR or isinstance(t, (ListOf, MapOf))
        if kind == B.BYTES_OR_VIEW:
            return t in (BYTES, VIEW_BYTES)
        if kind == B.RESPONSE:
            return isinstance(t, ResponseOf)
        if kind == B.HEADERS_OR_RESPONSE:
            return t == HEADERS or isinstance(t, ResponseOf)
        if kind == B.SORTABLE_LIST:
            return isinstance(t, ListOf) and t.elem in NUMBERS + (STR,)
        if kind == B.DB_ARG:
            return db_types.argument_fits(t, self.ctx.field_types)
        if kind == B.DB_OR_TX:
            return t in (DB, TX)
        live = live_types.fits_kind(t, kind)
        if live is not None:
            return live
        return t != NONE  # ANY

    def python_function_name(self, arg: syntax.Expr) -> Type:
        """`python_stub`'s function: the plain name of a `@python` function; its return type
        is what the stub's answer must be."""
        usage = "python_stub(f, ok(...)) names a @python function f by its name"
        if not isinstance(arg, syntax.Name):
            self.expr(arg)
            self.error(usage, arg.span)
            return UNKNOWN
        d = self.ctx.lookup(arg.id, self.file) if self.lookup(arg.id) is None else None
        info = self.ctx.program.functions.get(arg.id) if d is not None else None
        if info is None or info.decl.python is None:
            self.error(f"'{arg.id}' is not a @python function: {usage}", arg.span)
            return UNKNOWN
        self.ctx.refer(arg.span, info.decl.name_span)
        arg.ref, arg.type = "function", info.returns
        return info.returns

    def job_name(self, arg: syntax.Expr) -> Type:
        """`enqueue`'s job: a string literal naming a `@job` of the program, so a typo is a
        compile error and the payload is checked against that job's class."""
        self.expr(arg)
        jobs = self.ctx.program.jobs
        if not isinstance(arg, syntax.StrLit):
            self.error("the job of enqueue must be a string literal naming a @job", arg.span)
        elif arg.value not in jobs:
            known = ", ".join(f"'{name}'" for name in jobs) or "none"
            self.error(f"no @job named '{arg.value}' (the program's jobs: {known})"
                       f"{suggest(arg.value, list(jobs))}", arg.span)
        return STR

    def include_text(self, call: syntax.Call, arg: syntax.Expr) -> Type:
        """Read the named file (relative to this source file) now and embed its text."""
        self.expr(arg)
        if not isinstance(arg, syntax.StrLit):
            self.error("include_text needs a string literal naming a file", arg.span)
            return STR
        path = os.path.join(os.path.dirname(self.file), arg.value)
        problem = include_problem(arg.value, path, self.ctx.program.root)
        if problem is not None:
            self.error(problem, arg.span)
            return STR
        self.ctx.program.included_files.append(path)
        try:
            with open(path, encoding="utf-8", newline="") as f:  # the text as is, CRLF kept
                call.embedded_text = f.read()
        except FileNotFoundError:
            self.error(f"include_text: file '{arg.value}' not found (looked for {path})",
                       arg.span)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error(f"include_text: cannot read '{arg.value}': {reason}", arg.span)
        return STR
