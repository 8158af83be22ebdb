"""Code generation: the checked program → one Python `ast.Module` per `.svc` file.

Every generated node carries the `.svc` line and column of the construct it came from, and
each module is compiled with its `.svc` path as the file name, so a run-time fault's traceback
points at the user's line. The checker has annotated every expression with its type and every
call with what it calls, so nothing here guesses.

Shape of a generated module (all modules run in one shared namespace, in load order):

    from svc.runtime.lib.support import add64 as _svc_add64, ...   # only the names used
    from svc.rules.contract import Route as _svc_Route, ...           # entry module, with routes
    class Task(_svc_Struct, forbid_unknown_fields=True): ...    # one per svc class
    async def get_task(db, id): ...                              # one per svc function
    slugify = _svc_python_calls.function("slugify", "slugs", ...)  # one per @python function
    _svc_ROUTES = [_svc_Route(...), ...]                         # entry module only
    _svc_SETTINGS = _svc_Settings.from_tables({...})              # entry: svc.toml's tables
    _svc_CONFIG = ((AppConfig, "AppConfig", fields), ...)        # entry, if config[T] is used

Names: everything the generator introduces starts with `_svc_`; user names that are Python
keywords or start with `_svc` are renamed to `_svc_u_<name>`, and locals that share a
top-level name to `_svc_l_<name>` (Python decides local-vs-global per function, svc per block).
"""

from __future__ import annotations

import ast
import copy
import keyword

from svc.compiler.check import config_class
from svc.compiler.check.python_functions import DEFAULT_ERROR_KIND
from svc.compiler.codegen import background_table, builtin_calls, guard_calls, route_table
from svc.compiler.codegen.pyast import (
    CONFIG, JOBS, PREFIX, ROUTES, SCHEDULES, SETTINGS, TX_SCOPE, CodegenError, field_name, type_of,
)
from svc.compiler.codegen.pyast import call as _call, located as _located, name as _name
from svc.compiler.codegen.pyast import store as _store
from svc.compiler.codegen.statements import StatementGen
from svc.compiler.codegen.fstrings import fstring
from svc.compiler.front import syntax
from svc.compiler import svctypes as T
from svc.compiler.program import CheckedProgram, ClassInfo
from svc.rules.contract import INT_RANGES

#: svc scalar type → how it is named in generated annotations (support aliases).
_TYPE_NAMES = {
    "i64": "T_I64", "i32": "T_I32", "f64": "T_F64", "bool": "T_BOOL", "str": "T_STR",
    "bytes": "T_BYTES",
}

_INT_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
_FLOAT_OPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult}
_INT_RANGES: dict[T.Type, tuple[int, int]] = {T.I64: INT_RANGES["i64"], T.I32: INT_RANGES["i32"]}
_COMPARE = {"==": ast.Eq, "!=": ast.NotEq, "<": ast.Lt, ">": ast.Gt, "<=": ast.LtE, ">=": ast.GtE}

def generate(program: CheckedProgram) -> list[tuple[str, ast.Module]]:
    """One Python module per `.svc` file, in load order; the entry module comes last and
    defines `_svc_ROUTES`, the route list `serve` receives."""
    globals_ = (set(program.classes) | set(program.functions) | set(program.constants)
                | set(program.enums))
    sync_twins: set[str] = set()  # filled while generating; the entry module's route list reads it
    out = []
    for module in program.modules:
        is_entry = module.path == program.entry
        gen = _ModuleGen(program, globals_, module, is_entry, sync_twins)
        out.append((module.path, gen.build()))
    return out


def sync_twin_name(function: str) -> str:
    return f"{PREFIX}sync_{global_name(function)}"


def _suspends(node: ast.AsyncFunctionDef) -> bool:
    return any(isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in ast.walk(node))


#: How each character of a generic class's instantiation name (`Page[List[Task]]`) is spelt
#: in its Python name; `_` itself is doubled, so no two svc names get one Python name.
_INSTANCE_CHARS = {"_": "__", "[": "_of_", "]": "_end_", ",": "_and_", " ": "", "?": "_opt_"}


def instance_name(name: str) -> str:
    """The Python class of an instantiation: `Page[Task]` → `_svc_g_Page_of_Task_end_`, which
    no svc name can have (user names starting with `_svc` are renamed)."""
    return PREFIX + "g_" + "".join(_INSTANCE_CHARS.get(ch, ch) for ch in name)


def global_name(name: str) -> str:
    """The Python name of a top-level svc name (function or class)."""
    if "[" in name:
        return instance_name(name)
    if keyword.iskeyword(name) or name.startswith(PREFIX) or name in ("__name__", "__builtins__"):
        return f"{PREFIX}u_{name}"
    return name


def type_source(t: T.Type) -> str:
    """A Python expression for `t` as msgspec sees it (used in field annotations and in
    `json_decode[T]`); it refers only to support aliases and generated classes."""
    if isinstance(t, T.Prim):
        if t.name in _TYPE_NAMES:
            return PREFIX + _TYPE_NAMES[t.name]
        return "None" if t.name in ("unit", "None") else PREFIX + "T_ANY"
    if isinstance(t, T.ListOf):
        return f"{PREFIX}List[{type_source(t.elem)}]"
    if isinstance(t, T.Opt):
        return f"{PREFIX}Optional[{type_source(t.inner)}]"
    if isinstance(t, (T.ClassRef, T.EnumRef)):
        return global_name(t.name)
    if isinstance(t, T.MapOf):
        return f"{PREFIX}Dict[{PREFIX}T_STR, {type_source(t.value)}]"
    return PREFIX + "T_ANY"


class _ModuleGen:
    """Generates one module; collects the support names it uses for the import line.

    Expressions are generated here, statements by `self.statements`, which gets what it needs
    of this class through `statements.ExpressionGen` (`expr`, `arith`, `local`, `temp`, `rt`).
    """

    def __init__(self, program: CheckedProgram, globals_: set[str], module: syntax.Module,
                 is_entry: bool, sync_twins: set[str]) -> None:
        self.program = program
        self.sync_twins = sync_twins
        self.globals = globals_
        self.module = module
        self.is_entry = is_entry
        self.support: set[str] = set()
        self.contract: set[str] = set()
        self.runtime_modules: set[str] = set()
        self.temps = 0
        self.uses_try = False
        self.uses_tx_scope = False
        self.statements = StatementGen(self, module)

    # --- module ---------------------------------------------------------------------------

    def build(self) -> ast.Module:
        body: list[ast.stmt] = []
        for item in self.module.items:
            if isinstance(item, syntax.ClassDef) and item.type_params:
                body.extend(self.generic_class_defs(item))
            elif isinstance(item, syntax.ClassDef):
                body.append(self.class_def(item))
            elif isinstance(item, syntax.FunctionDef) and item.python is not None:
                body.append(self.python_function(item, item.python))
            elif isinstance(item, syntax.FunctionDef):
                node = self.function_def(item)
                body.append(node)
                twin = self.sync_twin(item, node)
                if twin is not None:
                    body.append(twin)
        body += self.constants_and_enums()
        if self.is_entry:
            body.append(self.settings_value())
            body += self.route_list()
            body += self.background_lists()
            if self.program.config_classes:
                body.append(self.config_table())
        head = self.imports()
        mod = ast.Module(body=head + body, type_ignores=[])
        first = self.module.items[0].span if self.module.items else None
        for stmt in head:
            if first is not None:
                _located(stmt, first)
            else:
                stmt.lineno = stmt.end_lineno = 1
                stmt.col_offset = stmt.end_col_offset = 0
        return ast.fix_missing_locations(mod)

    def imports(self) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        if self.support:
            names = [ast.alias(name=n, asname=PREFIX + n) for n in sorted(self.support)]
            out.append(ast.ImportFrom(module="svc.runtime.lib.support", names=names, level=0))
        if self.contract:
            names = [ast.alias(name=n, asname=PREFIX + n) for n in sorted(self.contract)]
            out.append(ast.ImportFrom(module="svc.rules.contract", names=names, level=0))
        if self.is_entry:
            out.append(ast.ImportFrom(module="svc.rules.settings", names=[
                ast.alias(name="Settings", asname=PREFIX + "Settings")], level=0))
        for mod in sorted(self.runtime_modules):
            package, _, leaf = f"svc.runtime.{mod}".rpartition(".")
            out.append(ast.ImportFrom(module=package, names=[
                ast.alias(name=leaf, asname=PREFIX + leaf)], level=0))
        return out

    def rt(self, name: str) -> ast.Name:
        """A support function or constant, imported as `_svc_<name>`."""
        self.support.add(name)
        return _name(PREFIX + name)

    def contract_name(self, name: str) -> ast.Name:
        """A name of svc.rules.contract (the route description), imported as `_svc_<name>`."""
        self.contract.add(name)
        return _name(PREFIX + name)

    def runtime(self, module: str, attr: str) -> ast.Attribute:
        """`svc.runtime.<module>.<attr>` (module may be dotted: `http.headers`), imported
        only by modules that use it, as `_svc_<last part of module>`."""
        self.runtime_modules.add(module)
        leaf = module.rpartition(".")[2]
        return ast.Attribute(value=_name(PREFIX + leaf), attr=attr, ctx=ast.Load())

    def temp(self) -> str:
        self.temps += 1
        return f"{PREFIX}t{self.temps}"

    def local(self, name: str) -> str:
        if name in self.globals or keyword.iskeyword(name) or name.startswith(PREFIX):
            return f"{PREFIX}l_{name}"
        return name

    # --- classes --------------------------------------------------------------------------

    def generic_class_defs(self, decl: syntax.ClassDef) -> list[ast.stmt]:
        """A generic class is one Struct per instantiation the program uses (`Page[Task]`),
        so each knows its exact field types; the generic class itself has none."""
        return [self.class_def(decl, info) for info in self.program.classes.values()
                if info.decl is decl]

    def class_def(self, decl: syntax.ClassDef, info: ClassInfo | None = None) -> ast.ClassDef:
        info = info or self.program.classes[decl.name]
        annotations = ast.Dict(keys=[ast.Constant(field_name(n)) for n, _ in info.fields],
                               values=[ast.Constant(self.annotation(t)) for _, t in info.fields])
        fields = tuple(_field_entry(name, ftype) for name, ftype in info.fields)
        body: list[ast.stmt] = [
            ast.Assign(targets=[_store("__annotations__")], value=annotations),
            # a tuple of constants is a constant to compile() (typeshed lists scalars only)
            ast.Assign(targets=[_store("__svc_fields__")],
                       value=ast.Constant(fields))]  # type: ignore[arg-type]
        rules = _rules_entries(decl)
        if rules:  # only a class with rules of its own: binding checks nothing for the others
            body.append(ast.Assign(targets=[_store("__svc_rules__")],
                                   value=ast.Constant(rules)))  # type: ignore[arg-type]
        keywords = [ast.keyword(arg="forbid_unknown_fields", value=ast.Constant(True))]
        renamed = {field_name(n): n for n, _ in info.fields if field_name(n) != n}
        if renamed:
            keywords.append(ast.keyword(arg="rename", value=ast.Dict(
                keys=[ast.Constant(k) for k in renamed],
                values=[ast.Constant(v) for v in renamed.values()])))
        node = ast.ClassDef(name=global_name(info.name), bases=[self.rt("Struct")],
                            keywords=keywords, body=body, decorator_list=[])
        return _located(node, decl.span)

    def annotation(self, t: T.Type) -> str:
        """The field annotation text; registers the support aliases it mentions."""
        text = type_source(t)
        for alias in list(_TYPE_NAMES.values()) + ["List", "Optional", "T_ANY", "Dict"]:
            if PREFIX + alias in text:
                self.support.add(alias)
        return text

    # --- constants and enums ----------------------------------------------------------------

    def constants_and_enums(self) -> list[ast.stmt]:
        """`Role = Literal["admin", "member"]` per enum (msgspec checks JSON against it), then
        `LIMIT = 100` per constant: after the module's classes, which their values may build."""
        out: list[ast.stmt] = []
        for item in self.module.items:
            if isinstance(item, syntax.EnumDef):
                members = ast.Tuple(elts=[ast.Constant(m) for m in item.members], ctx=ast.Load())
                literal = ast.Subscript(value=self.rt("Literal"), slice=members, ctx=ast.Load())
                out.append(_located(ast.Assign(targets=[_store(global_name(item.name))],
                                               value=literal), item.span))
        for item in self.module.items:
            if isinstance(item, syntax.ConstDef):
                out.append(_located(ast.Assign(targets=[_store(global_name(item.name))],
                                               value=self.expr(item.value)), item.span))
        return out

    def constant(self, e: syntax.Name) -> ast.expr:
        """A use of a constant: a list, map or class instance is copied at each use, so nothing
        can change the constant through it (`append`, a field assignment, a callee)."""
        value = _name(global_name(e.id))
        t = e.type.inner if isinstance(e.type, T.Opt) else e.type
        if isinstance(t, (T.ListOf, T.MapOf, T.ClassRef)):
            return _call(self.rt("copy"), [value])
        return value

    # --- functions ------------------------------------------------------------------------

    def function_def(self, decl: syntax.FunctionDef) -> ast.stmt:
        self.uses_try = False
        self.uses_tx_scope = False
        self.temps = 0
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=self.local(p.name)) for p in decl.params],
                             vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        for arg, param in zip(args.args, decl.params):
            _located(arg, param.span)
        body = self.statements.block(decl.body)
        if self.uses_try:
            body = [self.propagate_boundary(body, decl.span)]
        if self.uses_tx_scope:
            body = self.transaction_scope(body, decl.span)
        cls = ast.AsyncFunctionDef if decl.is_async else ast.FunctionDef
        node = cls(name=global_name(decl.name), args=args, body=body, decorator_list=[],
                   returns=None, type_comment=None)
        return _located(node, decl.span)

    def python_function(self, decl: syntax.FunctionDef, attr: syntax.PythonAttr) -> ast.stmt:
        """`name = _svc_python_calls.function("name", module, attribute, error kind, (param
        types), result type, "file:line")`: the runtime's async function that calls Python
        across the boundary, converting and checking each value against these types."""
        info = self.program.functions[decl.name]
        ok = info.returns.ok if isinstance(info.returns, T.ResultOf) else T.UNIT
        params = ast.Tuple(elts=[self.type_value(t) for _, t in info.params], ctx=ast.Load())
        where = f"{decl.span.file}:{decl.span.line}"
        constants = [decl.name, attr.module, attr.attribute, attr.error or DEFAULT_ERROR_KIND]
        call = _call(self.runtime("lib.python_calls", "function"),
                     [ast.Constant(c) for c in constants]
                     + [params, self.type_value(ok), ast.Constant(where)])
        node = ast.Assign(targets=[_store(global_name(decl.name))], value=call)
        return _located(node, decl.span)

    def sync_twin(self, decl: syntax.FunctionDef, node: ast.stmt) -> ast.stmt | None:
        """A plain `def` copy of a route handler whose body never awaits, for the route table.

        Such a coroutine always finishes in its first step; called as a plain function it
        answers without a coroutine object and the StopIteration that carries its result
        (measured: ~3.5 us of server CPU per request on the small JSON route). svc code
        that calls the handler still awaits the `async def`.
        """
        if not isinstance(node, ast.AsyncFunctionDef) or _suspends(node):
            return None
        routes = self.program.routes
        if any(r.handler == decl.name and r.stream for r in routes) or not any(
                r.handler == decl.name or any(g.guard == decl.name for g in r.guards) for r in routes):
            return None  # a stream's handler (a coroutine, answers.py), or neither handler nor guard
        self.sync_twins.add(decl.name)
        twin = ast.FunctionDef(name=sync_twin_name(decl.name), args=copy.deepcopy(node.args),
                               body=copy.deepcopy(node.body), decorator_list=[], returns=None,
                               type_comment=None)
        return ast.copy_location(twin, node)

    def tx_scope(self) -> ast.Name:
        self.uses_tx_scope = True
        return _name(TX_SCOPE)

    def transaction_scope(self, body: list[ast.stmt], span) -> list[ast.stmt]:
        """A function that calls `db_begin` ends what it began: `_svc_txs = []; try: body
        finally: end_transactions(_svc_txs)` rolls back (and logs) each transaction it left
        open, whether it returned or failed (language.md, "Transactions"). Functions that
        do not call `db_begin` are generated without it."""
        end = _call(self.runtime("db", "end_transactions"), [_name(TX_SCOPE)])
        scope = ast.Assign(targets=[_store(TX_SCOPE)], value=ast.List(elts=[], ctx=ast.Load()))
        wrapped = ast.Try(body=body, handlers=[], orelse=[], finalbody=[ast.Expr(value=end)])
        return [_located(scope, span), _located(wrapped, span)]

    def propagate_boundary(self, body: list[ast.stmt], span) -> ast.stmt:
        """`try e` unwinds with support.Propagate; the function that used it returns the error."""
        handler = ast.ExceptHandler(
            type=self.rt("Propagate"), name=PREFIX + "p",
            body=[ast.Return(value=ast.Attribute(value=_name(PREFIX + "p"), attr="error",
                                                 ctx=ast.Load()))])
        return _located(ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[]), span)

    # --- expressions ----------------------------------------------------------------------

    def expr(self, e: syntax.Expr) -> ast.expr:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(f"no code generation for expression {type(e).__name__}")
        return _located(method(e), e.span)

    def expr_IntLit(self, e: syntax.IntLit) -> ast.expr:
        return ast.Constant(e.value)

    def expr_FloatLit(self, e: syntax.FloatLit) -> ast.expr:
        return ast.Constant(float(e.value))

    def expr_StrLit(self, e: syntax.StrLit) -> ast.expr:
        return ast.Constant(e.value)

    def expr_BoolLit(self, e: syntax.BoolLit) -> ast.expr:
        return ast.Constant(bool(e.value))

    def expr_NoneLit(self, e: syntax.NoneLit) -> ast.expr:
        return ast.Constant(None)

    def expr_UnitLit(self, e: syntax.UnitLit) -> ast.expr:
        return ast.Constant(None)

    def expr_Name(self, e: syntax.Name) -> ast.expr:
        if e.ref == "const":
            return self.constant(e)
        if e.ref in ("function", "class"):
            return _name(global_name(e.id))
        return _name(self.local(e.id))

    def expr_Attribute(self, e: syntax.Attribute) -> ast.expr:
        if isinstance(e.value, syntax.Name) and e.value.ref == "enum":
            return ast.Constant(e.attr)  # `Role.admin` is "admin"
        return ast.Attribute(value=self.expr(e.value), attr=field_name(e.attr), ctx=ast.Load())

    def expr_Index(self, e: syntax.Index) -> ast.expr:
        return _call(self.rt("index"), [self.expr(e.value), self.expr(e.index)])

    def expr_Slice(self, e: syntax.Slice) -> ast.expr:
        """`s[a:b]`: stdlib.slice_text for a str (UTF-8 byte bounds), slice_ otherwise; a
        missing start is 0, a missing end None (the length)."""
        function = "slice_text" if e.value.type == T.STR else "slice_"
        start = ast.Constant(0) if e.start is None else self.expr(e.start)
        end = ast.Constant(None) if e.end is None else self.expr(e.end)
        return _call(self.runtime("lib.stdlib", function), [self.expr(e.value), start, end])

    def expr_FString(self, e: syntax.FString) -> ast.expr:
        return fstring(e, self.expr)

    def expr_ListLit(self, e: syntax.ListLit) -> ast.expr:
        return ast.List(elts=[self.expr(x) for x in e.elements], ctx=ast.Load())

    def expr_Unary(self, e: syntax.Unary) -> ast.expr:
        if e.op == "not":
            return ast.UnaryOp(op=ast.Not(), operand=self.expr(e.operand))
        if e.type in T.INTEGERS:
            if isinstance(e.operand, syntax.IntLit):
                return ast.Constant(-e.operand.value)
            return _call(self.rt("neg" + _bits(e.type)), [self.expr(e.operand)])
        return ast.UnaryOp(op=ast.USub(), operand=self.expr(e.operand))

    def expr_Binary(self, e: syntax.Binary) -> ast.expr:
        if e.op in ("and", "or"):
            op = ast.And() if e.op == "and" else ast.Or()
            return ast.BoolOp(op=op, values=[self.expr(e.left), self.expr(e.right)])
        if e.op in _COMPARE:
            return self.compare(e)
        return self.arith(e.op, type_of(e.left), self.expr(e.left), self.expr(e.right))

    def compare(self, e: syntax.Binary) -> ast.expr:
        """`x == None` tests identity; everything else is Python's (structural) comparison."""
        op = _COMPARE[e.op]()
        if e.op in ("==", "!=") and (isinstance(e.left, syntax.NoneLit)
                                     or isinstance(e.right, syntax.NoneLit)):
            op = ast.Is() if e.op == "==" else ast.IsNot()
        return ast.Compare(left=self.expr(e.left), ops=[op], comparators=[self.expr(e.right)])

    def arith(self, op: str, operand_type: T.Type, left: ast.expr, right: ast.expr) -> ast.expr:
        """Checked integer arithmetic through support; f64 with IEEE division; str `+`."""
        if operand_type in T.INTEGERS and op in _FLOAT_OPS:
            return self.checked_inline(op, operand_type, left, right)
        if operand_type in T.INTEGERS:
            return _call(self.rt(_INT_OPS[op] + _bits(operand_type)), [left, right])
        if operand_type == T.F64 and op in ("/", "%"):
            return _call(self.rt("fdiv" if op == "/" else "fmod"), [left, right])
        if op in _FLOAT_OPS:
            return ast.BinOp(left=left, op=_FLOAT_OPS[op](), right=right)
        raise CodegenError(f"operator {op} on {operand_type}")

    def checked_inline(self, op: str, t: T.Type, left: ast.expr, right: ast.expr) -> ast.expr:
        """`+ - *` on integers, range-checked inline (twice as fast as a support call):
        `(_svc_r if MIN <= (_svc_r := left op right) <= MAX else _svc_overflow64())`.
        One temporary per function is enough: its value is read right after it is set."""
        low, high = _INT_RANGES[t]
        result = PREFIX + "r"
        value = ast.NamedExpr(target=_store(result),
                              value=ast.BinOp(left=left, op=_FLOAT_OPS[op](), right=right))
        test = ast.Compare(left=ast.Constant(low), ops=[ast.LtE(), ast.LtE()],
                           comparators=[value, ast.Constant(high)])
        return ast.IfExp(test=test, body=_name(result),
                         orelse=_call(self.rt("overflow" + _bits(t)), []))

    def expr_Await(self, e: syntax.Await) -> ast.expr:
        return ast.Await(value=self.expr(e.value))

    def expr_Try(self, e: syntax.Try) -> ast.expr:
        self.uses_try = True
        return _call(self.rt("unwrap"), [self.expr(e.value)])

    def expr_Call(self, e: syntax.Call) -> ast.expr:
        kind, target = e.call_kind, e.target
        if kind == "builtin":
            return self.builtin(e)
        if kind == "map":  # `Map[str, T]()`
            return ast.Dict(keys=[], values=[])
        if kind == "some":
            return self.expr(e.args[0])  # a `T?` is the value or None: Some(x) is x
        if target is None or kind not in ("class", "function", "async_function"):
            raise CodegenError(f"call without a call_kind and target: {e.target or e.func}")
        if kind == "class":
            keywords = [_located(ast.keyword(arg=field_name(k.name), value=self.expr(k.value)), k.span)
                        for k in e.keywords]
            return _call(_name(global_name(target)), [], keywords)
        return _call(_name(global_name(target)), [self.expr(a) for a in e.args])

    # --- builtins -------------------------------------------------------------------------

    def builtin(self, e: syntax.Call) -> ast.expr:
        return builtin_calls.lower(self, e)

    def type_value(self, t: T.Type) -> ast.expr:
        """`t` as a run-time value (the class for a class; a msgspec type otherwise)."""
        text = self.annotation(t)
        return ast.parse(text, mode="eval").body

    # --- routes ---------------------------------------------------------------------------

    def route_list(self) -> list[ast.stmt]:
        """The guarded routes' functions (codegen/guard_calls.py), then `_svc_ROUTES`."""
        routes = self.program.routes
        out: list[ast.stmt] = []
        names: dict[int, str] = {}
        for index, route in enumerate(routes):
            if route.guards:
                limited = frozenset(guard for guard, _ in self.program.settings.guard_limits)
                fn = guard_calls.wrapper(route, index, self.callee, self.rt("SvcError"), limited,
                                         self.runtime("traffic.gate", "guard_limit") if limited else None)
                here = route.span if route.span.file == self.module.path else None
                out.append(_located(fn, here) if here is not None else fn)
                names[id(route)] = guard_calls.wrapper_name(index)
        entries = route_table.route_entries(
            routes, lambda r: names.get(id(r)) or self.handler_name(r.handler),
            self.type_value, self.contract_name)
        for entry, route in zip(entries, routes):
            _located(entry, route.span)
        node = ast.Assign(targets=[_store(ROUTES)], value=ast.List(elts=entries, ctx=ast.Load()))
        if routes:
            out.append(_located(node, routes[-1].span))
        else:
            out.append(node)  # fix_missing_locations places it after the last definition
        return out

    def callee(self, function: str) -> tuple[str, bool]:
        """What a guarded route's function calls for `function`, and whether it is plain."""
        if function in self.sync_twins:
            return sync_twin_name(function), True
        info = self.program.functions[function]
        return global_name(function), not info.is_async

    def background_lists(self) -> list[ast.stmt]:
        """`_svc_JOBS` and `_svc_SCHEDULES`: what `serve` runs outside requests."""
        jobs = list(self.program.jobs.values())
        schedules = self.program.schedules
        job_list = background_table.job_entries(jobs, global_name, self.type_value,
                                                self.contract_name)
        schedule_list = background_table.schedule_entries(schedules, global_name,
                                                          self.contract_name)
        out: list[ast.stmt] = []
        for name, entries, spans in ((JOBS, job_list, [j.span for j in jobs]),
                                     (SCHEDULES, schedule_list, [s.span for s in schedules])):
            for entry, span in zip(entries, spans):
                _located(entry, span)
            node = ast.Assign(targets=[_store(name)], value=ast.List(elts=entries, ctx=ast.Load()))
            out.append(_located(node, spans[-1]) if spans else node)
        return out

    def settings_value(self) -> ast.stmt:
        """`_svc_SETTINGS = _svc_Settings.from_tables({...})`: svc.toml's checked tables,
        built into the program's settings as svc.project built them (svc.rules.settings);
        `_svc_Settings()`, the defaults, without svc.toml."""
        settings = self.program.settings
        call = ast.Call(func=_name(PREFIX + "Settings"), args=[], keywords=[])
        if settings.config is not None:  # a project: svc.toml's tables, the defaults filled in
            tables = ast.parse(repr(dict(settings.tables)), mode="eval").body
            call = ast.Call(func=ast.Attribute(value=call.func, attr="from_tables",
                                               ctx=ast.Load()), args=[tables], keywords=[])
        return ast.Assign(targets=[_store(SETTINGS)], value=call)

    def config_table(self) -> ast.stmt:
        """`_svc_CONFIG = ((Class, "Class", fields), ...)`: the configuration classes, read
        by svc.runtime.lib.config before `main` with svc.toml's `[config]` (the settings')."""
        entries: list[ast.expr] = [
            ast.Tuple(elts=[_name(global_name(name)), ast.Constant(name),
                            # a tuple of constants is a constant to compile()
                            ast.Constant(config_class.field_specs(  # type: ignore[arg-type]
                                self.program, name))],
                      ctx=ast.Load())
            for name in self.program.config_classes]
        return ast.Assign(targets=[_store(CONFIG)], value=ast.Tuple(elts=entries, ctx=ast.Load()))

    def handler_name(self, function: str) -> str:
        """The Python function a route calls: the plain-def twin when there is one."""
        return sync_twin_name(function) if function in self.sync_twins else global_name(function)


def _bits(t: T.Type) -> str:
    return "64" if t == T.I64 else "32"


def _rules_entries(decl: syntax.ClassDef) -> tuple:
    """`(attribute, JSON name, rules)` per field with checked rules, for `__svc_rules__`
    (svc.rules.field_checks reads it); each rule a plain tuple (`field_rules.Rule`)."""
    return tuple((field_name(f.name), f.name, tuple(tuple(r.rule) for r in f.rules if r.rule))
                 for f in decl.fields if any(r.rule for r in f.rules))


def _field_entry(name: str, t: T.Type) -> tuple:
    """`(name, type_name, optional)` for `__svc_fields__` (the database row mapper), with
    `"enum", members` after it for an enum and `"json"` for a List, Map or class (whose
    decoding type the mapper takes from the field's annotation)."""
    optional = isinstance(t, T.Opt)
    inner = t.inner if isinstance(t, T.Opt) else t
    kind = T.db_kind(inner)
    if isinstance(inner, T.EnumRef):
        return (name, inner.name, optional, "enum", inner.members)
    if kind == "json":
        return (name, T.format_type(inner), optional, "json")
    return (name, T.format_type(inner), optional)
