"""The checker: names, types and program rules (docs/reference/language.md §2–§7) over the
parsed modules.

`check(modules, entry)` collects every top-level definition (names are global across files),
works out what each file may see (its own definitions plus its imports), resolves the written
types of classes and functions, checks `main`, then checks each function body (`body.py`),
which gets the tables through a `CheckContext` (`context.py`), not this checker itself.
Errors are collected, never raised; the AST is annotated in place for the code generator.
The route table is the next step (`routes.py`, run by `svc.pipeline`).
"""

from __future__ import annotations

import sys

from svc.compiler.check.background import build_background
from svc.compiler.check import generics, http_types as check_http, live_types
from svc.compiler.check.body import BodyChecker
from svc.compiler.check.constants import check_constants, check_enum, enum_type
from svc.compiler.check.context import CheckContext, Definition, suggest
from svc.compiler.check.field_rules import check_field_rules
from svc.compiler.check.python_functions import check_python_functions
from svc.compiler.front import syntax
from svc.compiler.builtin_table import RESERVED_NAMES
from svc.compiler.diagnostics import Diagnostic
from svc.compiler.program import CheckedProgram, ClassInfo, FunctionInfo
from svc.compiler.source import Span
from svc.rules.contract import RECURSION_LIMIT
from svc.compiler.svctypes import (
    BOOL, BYTES, DB, ERROR, F64, HTML, I32, I64, NONE, STR, TX, UNIT, UNKNOWN, ClassRef, ListOf,
    Opt, ResultOf, Type, View, contains_tx, contains_view, format_type,
)

_KINDS = {syntax.ClassDef: "class", syntax.FunctionDef: "function", syntax.ConstDef: "const",
          syntax.EnumDef: "enum"}
_PRIMS = {t.name: t for t in (I64, I32, F64, BOOL, STR, BYTES, UNIT, HTML, DB, TX, ERROR)}


def check(modules: list[syntax.Module], entry: str, root: str = ".",
          python_path: tuple[str, ...] = ()) -> tuple[CheckedProgram, list[Diagnostic]]:
    """Check a whole program; `modules` are in load order (entry last); `root` is the folder
    include_text may read from; `python_path` the folders of the project's Python packages
    (what `@python` declarations are imported from first)."""
    checker = Checker(modules, entry)
    checker.python_path = python_path
    checker.ctx.program.root = root
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, RECURSION_LIMIT))  # long `a + b + ...` chains nest deeply
    try:
        checker.run()
    except RecursionError:  # absurdly deep nesting: a diagnostic, never a traceback
        checker.error("expression or block nested too deeply to check", Span(entry, 1, 1, 1, 1))
    finally:
        sys.setrecursionlimit(limit)
    diagnostics = sorted(checker.ctx.diagnostics, key=Diagnostic.sort_key)
    return checker.ctx.program, diagnostics


class Checker:
    """The program-level step: definitions, per-file visibility, resolved declarations, kept
    in `ctx`, which is all the body checker gets."""

    def __init__(self, modules: list[syntax.Module], entry: str) -> None:
        self.modules = modules
        self.entry = entry
        self.own: dict[str, list[str]] = {m.path: [] for m in modules}  # file → names it defines
        self.ctx = CheckContext(program=CheckedProgram(entry=entry, modules=modules),
                                definitions={}, visible={}, diagnostics=[],
                                resolve_type=self.resolve_type)
        self.type_env: dict[str, Type] = {}  # a generic class's type parameters (generics.py)
        self.python_path: tuple[str, ...] = ()  # where @python modules are imported from first

    def error(self, message: str, span: Span) -> None:
        self.ctx.error(message, span)

    def run(self) -> None:
        for module in self.modules:
            self.collect(module)
        for module in self.modules:
            self.ctx.visible[module.path] = self.visibility(module)
        for name, d in self.ctx.definitions.items():
            if isinstance(d.decl, syntax.EnumDef):
                self.ctx.program.enums[name] = check_enum(self.ctx, d.decl)
        for name, d in self.ctx.definitions.items():
            if isinstance(d.decl, syntax.ClassDef) and d.decl.type_params:
                generics.check_template(self, d.decl, d.file)
            elif isinstance(d.decl, syntax.ClassDef):
                self.ctx.program.classes[name] = self.resolve_class(d.decl, d.file)
        check_field_rules(self.ctx)
        for name, d in self.ctx.definitions.items():
            if isinstance(d.decl, syntax.FunctionDef):
                self.ctx.program.functions[name] = self.resolve_function(d.decl, d.file)
        check_constants(self.ctx)
        check_python_functions(self.ctx, self.python_path)
        self.check_main()
        # Before the bodies: `enqueue` calls are checked against the job table.
        program = self.ctx.program
        program.jobs, program.schedules = build_background(program.functions.values(),
                                                           self.ctx.diagnostics)
        for info in self.ctx.program.functions.values():
            if info.decl.python is None:  # a Python function has no svc body
                BodyChecker(self.ctx, info).check()

    # --- names -------------------------------------------------------------------------------

    def collect(self, module: syntax.Module) -> None:
        """Record the module's definitions; a name defined twice anywhere is an error."""
        for item in module.items:
            if isinstance(item, (syntax.Import, syntax.GuardDecl)):
                continue  # a guard declaration defines no name (check/guards.py)
            kind = _KINDS[type(item)]
            if item.name in RESERVED_NAMES:
                self.error(f"'{item.name}' is a built-in name and cannot be redefined",
                           item.name_span)
                continue
            earlier = self.ctx.definitions.get(item.name)
            if earlier is not None:
                where = earlier.decl.name_span
                shared = "" if earlier.file == module.path else (
                    " (top-level names are shared by all the files of a program)")
                self.error(f"'{item.name}' is already defined at "
                           f"{where.file}:{where.line}:{where.col}{shared}", item.name_span)
                # Still this file's name, so its uses here do not also read as not imported.
                self.own[module.path].append(item.name)
                continue
            self.ctx.definitions[item.name] = Definition(kind, item, module.path)
            self.own[module.path].append(item.name)

    def visibility(self, module: syntax.Module) -> set[str]:
        """Own names, every own name of `import "f"`, only the listed names of `from "f"`."""
        names = set(self.own[module.path])
        for item in module.items:
            if not isinstance(item, syntax.Import) or item.resolved_path not in self.own:
                continue  # an import that could not be loaded was reported when loading
            theirs = self.own[item.resolved_path]
            if item.names is None:
                names.update(theirs)
                continue
            spans = item.name_spans or [item.span] * len(item.names)
            for name, span in zip(item.names, spans):
                if name in theirs:
                    names.add(name)
                    if name in self.ctx.definitions:
                        self.ctx.refer(span, self.ctx.definitions[name].decl.name_span)
                else:
                    hint = suggest(name, theirs)
                    self.error(f"'{name}' is not defined in {item.path}{hint}", span)
        return names

    # --- types -------------------------------------------------------------------------------

    def resolve_type(self, texpr: syntax.TypeExpr, file: str) -> Type:
        """The Type a written type stands for; UNKNOWN (after an error) when it is invalid."""
        if isinstance(texpr, syntax.OptionalType):
            inner = self.resolve_type(texpr.inner, file)
            if inner in (UNIT, NONE) or isinstance(inner, Opt):
                self.error(f"'{format_type(inner)}?' is not a valid type", texpr.span)
                return UNKNOWN
            if isinstance(inner, ResultOf) and (inner.ok == UNIT or isinstance(inner.ok, Opt)):
                # unboxed at run time, ok(()) or ok(None) would read as the optional's None
                self.error(f"'{format_type(inner)}?' is not a valid type: its ok value can be "
                           "None, which would read as the optional's None", texpr.span)
                return UNKNOWN
            return UNKNOWN if inner == UNKNOWN else Opt(inner)
        name, args = texpr.name, texpr.args
        if name in check_http.TYPE_NAMES:
            return check_http.resolve_type(self.ctx, texpr, file)
        if name in live_types.TYPE_NAMES:
            return live_types.resolve_type(self.ctx, texpr, file)
        if name in _PRIMS or name in ("List", "Result", "view"):
            return self.resolve_builtin_type(texpr, file)
        special = generics.resolve_named(self, texpr, file)  # T, Map[str, T], Page[T]
        if special is not None:
            return special
        if args:
            self.error(f"type '{name}' takes no type arguments", texpr.span)
            return UNKNOWN
        d = self.ctx.lookup(name, file)
        if d is not None and d.kind == "class":
            self.ctx.refer(texpr.span, d.decl.name_span)
            return ClassRef(name)
        if d is not None and isinstance(d.decl, syntax.EnumDef):
            self.ctx.refer(texpr.span, d.decl.name_span)
            return enum_type(d.decl)
        if d is not None:
            what = "a constant" if d.kind == "const" else "a function"
            self.error(f"'{name}' is {what}, not a type", texpr.span)
        else:
            choices = [n for n in self.ctx.visible.get(file, ())
                       if self.ctx.definitions[n].kind in ("class", "enum")]
            hint = self.ctx.not_visible_hint(name) or suggest(name, choices + list(_PRIMS))
            self.error(f"unknown type '{name}'{hint}", texpr.span)
        return UNKNOWN

    def resolve_builtin_type(self, texpr: syntax.NamedType, file: str) -> Type:
        name, args = texpr.name, texpr.args
        arity = {"List": 1, "Result": 2, "view": 1}.get(name, 0)
        if len(args) != arity:
            expected = {0: "no type arguments", 1: "one type argument", 2: "two type arguments"}
            self.error(f"type '{name}' takes {expected[arity]}, found {len(args)}", texpr.span)
            return UNKNOWN
        if arity == 0:
            return _PRIMS[name]
        inner = [self.resolve_type(a, file) for a in args]
        if UNKNOWN in inner:
            return UNKNOWN
        if name == "List":
            problem = check_http.list_problem(inner[0])
            if problem:
                self.error(problem, texpr.span)
                return UNKNOWN
            if contains_view(inner[0]):
                self.error("a view cannot be put in a list", texpr.span)
                return UNKNOWN
            if contains_tx(inner[0]):
                self.error("a Tx cannot be put in a list (pass it to functions instead)",
                           texpr.span)
                return UNKNOWN
            return ListOf(inner[0])
        if name == "view":
            if inner[0] != BYTES:
                self.error(f"only view[bytes] exists, found view[{format_type(inner[0])}]",
                           texpr.span)
                return UNKNOWN
            return View(BYTES)
        return self.result_type(texpr, inner[0], inner[1])

    def result_type(self, texpr: syntax.NamedType, ok: Type, err: Type) -> Type:
        if err != ERROR:
            self.error(f"the error type of a Result must be Error, found {format_type(err)}",
                       texpr.args[1].span)
            return UNKNOWN
        if ok == ERROR or ok == Opt(ERROR):
            self.error(f"Result[{format_type(ok)}, Error] is not allowed: an Error cannot be the "
                       "success value of a Result", texpr.span)
            return UNKNOWN
        if isinstance(ok, ResultOf):
            self.error("a Result cannot hold another Result", texpr.span)
            return UNKNOWN
        return ResultOf(ok)

    # --- declarations ------------------------------------------------------------------------

    def resolve_class(self, decl: syntax.ClassDef, file: str) -> ClassInfo:
        fields: list[tuple[str, Type]] = []
        seen: set[str] = set()
        for f in decl.fields:
            t = self.resolve_type(f.annotation, file)
            if check_http.field_problem(t):
                self.error(f"field '{f.name}' of class {decl.name}: {check_http.field_problem(t)}",
                           f.annotation.span)
                t = UNKNOWN
            if contains_view(t):
                self.error(f"field '{f.name}' of class {decl.name}: a view cannot be stored "
                           "in a class field (use bytes)", f.annotation.span)
                t = UNKNOWN
            elif contains_tx(t):
                self.error(f"field '{f.name}' of class {decl.name}: a Tx cannot be stored in "
                           "a class field (a transaction lives in one request)",
                           f.annotation.span)
                t = UNKNOWN
            if f.name in seen:
                self.error(f"field '{f.name}' is declared twice in class {decl.name}", f.span)
                continue
            if len(f.name) > 4 and f.name.startswith("__") and f.name.endswith("__"):
                self.error(f"field name '{f.name}' is reserved: a field name cannot both begin "
                           "and end with '__'", f.span)
            seen.add(f.name)
            fields.append((f.name, t))
        return ClassInfo(decl.name, fields, decl, file)

    def resolve_function(self, decl: syntax.FunctionDef, file: str) -> FunctionInfo:
        params: list[tuple[str, Type]] = []
        seen: set[str] = set()
        for p in decl.params:
            t = self.resolve_type(p.annotation, file)
            if p.name in seen:
                self.error(f"parameter '{p.name}' is declared twice in '{decl.name}'", p.span)
                continue
            seen.add(p.name)
            params.append((p.name, t))
        returns: Type = UNIT
        if decl.returns is not None:
            returns = self.resolve_type(decl.returns, file)
            problem = check_http.return_problem(decl.name, returns)
            if problem:
                self.error(problem, decl.returns.span)
                returns = UNKNOWN
            if contains_view(returns):
                self.error(f"function '{decl.name}' cannot return a view (return bytes)",
                           decl.returns.span)
                returns = UNKNOWN
            elif contains_tx(returns):
                self.error(f"function '{decl.name}' cannot return a Tx (begin, use and end "
                           "a transaction in one function, or pass it in)", decl.returns.span)
                returns = UNKNOWN
        return FunctionInfo(decl.name, params, returns, decl.is_async, decl, file)

    def check_main(self) -> None:
        """Exactly one main, in the entry file: `def main()` or
        `async def main() -> Result[unit, Error]`, without parameters."""
        info = self.ctx.program.functions.get("main")
        if info is None:
            self.error("no main function: the entry file must define 'def main()' or "
                       "'async def main() -> Result[unit, Error]'", Span(self.entry, 1, 1, 1, 1))
            return
        decl = info.decl
        if info.file != self.entry:
            self.error(f"main must be defined in the entry file {self.entry}", decl.name_span)
        if decl.params:
            self.error("main takes no parameters", decl.params[0].span)
        where = decl.returns.span if decl.returns is not None else decl.name_span
        if info.is_async and info.returns not in (ResultOf(UNIT), UNKNOWN):
            self.error("async def main must return Result[unit, Error], found "
                       f"{format_type(info.returns)}", where)
        elif not info.is_async and info.returns not in (UNIT, UNKNOWN):
            self.error("def main() returns nothing; use 'async def main() -> Result[unit, Error]'"
                       f" to return a Result, found {format_type(info.returns)}", where)
        self.ctx.program.main = info
