"""What an editor asks about a checked program: the node at a position, where a name is
defined, what to show on hover, what may be completed, the symbols of a file.

Plain functions over the checker's output (`CheckedProgram`: the annotated AST and
`references`), independent of the Language Server Protocol, so `lsp.py` only translates.
Positions are 1-based (line, column) in characters, as in `Span`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from svc.compiler.effects.retries import retry_sentence
from svc.compiler.front import syntax
from svc.compiler.builtin_table import BUILTINS, RANGE, TYPE_NAMES
from svc.compiler.program import CheckedProgram, FunctionInfo, RouteInfo
from svc.compiler.source import Span
from svc.tools.routes import guard_text
from svc.compiler.svctypes import (
    STR, UNIT, UNKNOWN, ClassRef, EventsOf, Opt, ResultOf, SocketOf, Type, format_type,
)
from svc.rules.field_rules import message
from svc.rules.contract import (
    BODY_LIMIT, JOB_ATTEMPTS, JOB_BACKOFF_MS, JOB_DEADLINE_MS, SCHEDULE_DEADLINE_MS, ParamSource,
    TriggerKind, size_text,
)

KEYWORDS = ("def", "async", "await", "class", "let", "if", "elif", "else", "while", "for",
            "in", "return", "break", "continue", "pass", "match", "case", "try", "import",
            "from", "and", "or", "not", "True", "False", "None")


def contains(span: Span, line: int, col: int) -> bool:
    """Whether (line, col) is inside `span`, its end included (the cursor just after a
    name still means that name)."""
    if not span.line <= line <= span.end_line:
        return False
    if line == span.line and col < span.col:
        return False
    return not (line == span.end_line and col > span.end_col)


def _size(span: Span) -> tuple[int, int]:
    return (span.end_line - span.line, span.end_col - span.col)


def module_of(program: CheckedProgram, file: str) -> syntax.Module | None:
    return next((m for m in program.modules if m.path == file), None)


# --- the node at a position -------------------------------------------------------------------

def enclosing_item(module: syntax.Module, line: int) -> syntax.Decl | None:
    """The top-level item whose text holds `line`: from its first line up to the next item
    (an item's own span covers its header only)."""
    found = None
    for item in module.items:
        if _first_line(item) <= line:
            found = item
        else:
            break
    return found


def _first_line(item: syntax.Decl) -> int:
    """Where an item's text starts: a function's at its first attribute (`@get`, `@job`,
    `@python`)."""
    if isinstance(item, syntax.FunctionDef):
        python = [item.python] if item.python is not None else []
        return min([item.span.line] + [a.span.line for a in (*item.routes, *item.background,
                                                              *item.guards, *python)])
    return item.span.line


def node_at(module: syntax.Module, line: int, col: int) -> syntax.Node | None:
    """The smallest expression, name or declaration at the position."""
    item = enclosing_item(module, line)
    if item is None:
        return None
    best: syntax.Node | None = None
    for node in syntax.walk(item):
        span = _name_span(node) or node.span
        if contains(span, line, col) and (best is None or _size(span) <= _size(
                _name_span(best) or best.span)):
            best = node
    return best


def _name_span(node: syntax.Node) -> Span | None:
    """For a declaration, the span of its name (what a cursor on it means)."""
    if isinstance(node, (syntax.FunctionDef, syntax.ClassDef, syntax.Let, syntax.ConstDef,
                         syntax.EnumDef)):
        return node.name_span
    if isinstance(node, syntax.For):
        return node.var_span
    if isinstance(node, (syntax.Param, syntax.Field)):
        s = node.span
        return Span(s.file, s.line, s.col, s.line, s.col + len(node.name))
    return None


# --- go to definition -------------------------------------------------------------------------

def definition_at(program: CheckedProgram, file: str, line: int, col: int) -> Span | None:
    """Where the name at the position is defined (the innermost reference that holds it)."""
    best: tuple[Span, Span] | None = None
    for use, target in program.references.items():
        if use.file == file and contains(use, line, col):
            if best is None or _size(use) < _size(best[0]):
                best = (use, target)
    return best[1] if best else None


# --- hover -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hover:
    text: str  # markdown
    span: Span


def function_signature(info: FunctionInfo) -> str:
    params = ", ".join(f"{n}: {format_type(t)}" for n, t in info.params)
    prefix = "async def" if info.is_async else "def"
    return f"{prefix} {info.name}({params}) -> {format_type(info.returns)}"


def _routes_text(program: CheckedProgram, name: str) -> str:
    routes = [r for r in program.routes if r.handler == name]
    if not routes:
        decl = program.functions[name].decl if name in program.functions else None
        return "".join(f"\n\nroute: `{r.method} {r.path}`" for r in (decl.routes if decl else ()))
    return "".join(f"\n\nroute: `{r.method} {r.path}`" + _stream_text(r) + _body_text(r)
                   + _guards_text(r) + _retry_text(r) for r in routes)


def _stream_text(route: RouteInfo) -> str:
    """`, an event stream of Note` or `, a WebSocket (receives Said, sends Line)`."""
    stream = route.stream.type if route.stream is not None else None
    if isinstance(stream, EventsOf):
        return f", an event stream of {format_type(stream.message)}"
    if isinstance(stream, SocketOf):
        return (f", a WebSocket (receives {format_type(stream.incoming)}, sends "
                f"{format_type(stream.outgoing)})")
    return ""


def _body_text(route: RouteInfo) -> str:
    """`, body up to 10 MiB (files: photo)`: a body limit other than the server's 1 MiB, and
    the Upload parameters the body's files go to."""
    files = [p.name for p in route.params if p.source is ParamSource.UPLOAD]
    if route.body_limit == BODY_LIMIT and not files:
        return ""
    text = f", body up to {size_text(route.body_limit)}"
    return text + (f" (files: {', '.join(files)})" if files else "")


def _retry_text(route: RouteInfo) -> str:
    """`; run again when its transaction clashes ...`, or why not (effects/retries.py)."""
    sentence = retry_sentence(route)
    return "" if sentence is None else f"; {sentence}"


def _guards_text(route: RouteInfo) -> str:
    """`, guards: require_user (prefix /admin), require_admin`: what the route runs first."""
    if not route.guards:
        return ""
    return ", guards: " + ", ".join(guard_text(g) for g in route.guards)


def _guarded_text(program: CheckedProgram, name: str) -> str:
    """On a guard: its value's type and the routes it runs before."""
    routes = [r for r in program.routes if any(g.guard == name for g in r.guards)]
    if not routes:
        return ""
    value = next(g.value for r in routes for g in r.guards if g.guard == name)
    where = ", ".join(f"`{r.method} {r.path}`" for r in routes)
    return f"\n\nguard (value `{format_type(value)}`) of {where}"


def _background_text(program: CheckedProgram, name: str) -> str:
    """A job's or a schedule's role, as a route handler's hover shows its route: `job: `welcome`
    (3 attempts, backoff 100ms, deadline 2s)`, `schedule: every 5m, deadline 60s`,
    `schedule: cron `0 3 * * *` (UTC), deadline 60s`. Read from the attributes as written
    (a default where an option is left out), so a program with errors still shows them."""
    decl = program.functions[name].decl if name in program.functions else None
    text = ""
    for attr in decl.background if decl is not None else ():
        written = {o.name: o.value for o in attr.options}
        deadline = _duration(written.get("deadline"),
                             JOB_DEADLINE_MS if attr.kind is TriggerKind.JOB
                             else SCHEDULE_DEADLINE_MS)
        if attr.kind is TriggerKind.JOB:
            attempts = written.get("attempts")
            count = attempts if isinstance(attempts, int) else JOB_ATTEMPTS
            text += (f"\n\njob: `{attr.text}` ({count} attempt{'s' if count != 1 else ''}, "
                     f"backoff {_duration(written.get('backoff'), JOB_BACKOFF_MS)}, "
                     f"deadline {deadline})")
        elif attr.kind is TriggerKind.EVERY:
            text += f"\n\nschedule: every {attr.text}, deadline {deadline}"
        else:
            text += f"\n\nschedule: cron `{attr.text}` (UTC), deadline {deadline}"
    return text


def _duration(written: int | str | None, default_ms: int) -> str:
    """An option's duration as written, or its default (`"1s"`, `"60s"`)."""
    if isinstance(written, str):
        return written
    return f"{default_ms // 1000}s" if default_ms % 1000 == 0 else f"{default_ms}ms"


def _code(text: str) -> str:
    return f"```svc\n{text}\n```"


def python_declaration(attr: syntax.PythonAttr) -> str:
    """`@python("markdown", "markdown")` as written (with its `error=` when given)."""
    error = f', error="{attr.error}"' if attr.error is not None else ""
    return f'@python("{attr.module}", "{attr.attribute}"{error})'


def _python_text(attr: syntax.PythonAttr) -> str:
    """How a Python function's call runs: on the thread pool or awaited (unknown until the
    function could be imported)."""
    if attr.is_coroutine is None:
        return ""
    how = "awaited on the event loop" if attr.is_coroutine else "runs on the thread pool"
    return f"\n\nPython function `{attr.module}.{attr.attribute}`: {how}"


def describe_function(program: CheckedProgram, name: str) -> str | None:
    info = program.functions.get(name)
    if info is None:
        return None
    attr = info.decl.python
    if attr is not None:
        return _code(python_declaration(attr) + "\n" + function_signature(info)) \
            + _python_text(attr)
    return (_code(function_signature(info)) + _routes_text(program, name)
            + _background_text(program, name) + _guarded_text(program, name))


def describe_class(program: CheckedProgram, name: str) -> str | None:
    """A class, a generic class (`class Page[T]:`) or one of its instantiations (`Page[Task]`,
    its fields with T replaced)."""
    info = program.classes.get(name) or program.generic_classes.get(name)
    if info is None:
        return None
    if name in program.generic_classes:
        name = f"{name}[{', '.join(p.name for p in info.decl.type_params)}]"
    rules = {f.name: f.rules for f in info.decl.fields}
    fields = "".join("".join(f"\n    {written_rule(r)}" for r in rules.get(n, ()))
                     + f"\n    {n}: {format_type(t)}" for n, t in info.fields)
    return _code(f"class {name}:{fields}")


def written_rule(rule: syntax.FieldRule) -> str:
    """`@length(1, 240)`, as written (its literal arguments in svc's spelling)."""
    args = ", ".join(json.dumps(a.value, ensure_ascii=False) if isinstance(a, syntax.StrLit)
                     else str(getattr(a, "value", "...")) for a in rule.args)
    return f"@{rule.name}({args})"


def describe_field(field: syntax.Field) -> str:
    """A field, its rules above it as written, and what each says to a value that breaks it."""
    text = _code("".join(f"{written_rule(r)}\n" for r in field.rules)
                 + f"{field.name}: {_written(field.annotation)}")
    said = [f"`@{r.name}`: {message(r.rule)}" for r in field.rules if r.rule is not None]
    return text + ("\n\nchecked on what comes in (a request body, `json_decode`): "
                   + "; ".join(said) if said else "")


def describe_constant(program: CheckedProgram, name: str) -> str | None:
    """`LIMIT: i64 = 100` (the value when it is one literal)."""
    info = program.constants.get(name)
    if info is None:
        return None
    value = info.decl.value
    shown = ""
    if isinstance(value, (syntax.IntLit, syntax.FloatLit, syntax.BoolLit)):
        shown = f" = {value.value}"
    elif isinstance(value, syntax.StrLit):
        shown = f" = {json.dumps(value.value)}"
    topic = next((t for t in program.topics.values() if t.constant == name), None)
    if topic is not None:  # `NOTES: Topic[Note] = topic("notes")`
        return (_code(f"{name}: {format_type(info.type)} = topic({json.dumps(topic.name)})")
                + "\n\ntopic: live messages to every subscriber on the database, at most "
                  "once, in order per publisher")
    return _code(f"{name}: {format_type(info.type)}{shown}") + "\n\nconstant"


def describe_enum(program: CheckedProgram, name: str, member: str | None = None) -> str | None:
    """`enum Role: admin, member` (and which member, for `Role.admin`)."""
    decl = program.enums.get(name)
    if decl is None:
        return None
    text = _code(f"enum {name}: {', '.join(decl.members)}")
    return text + (f"\n\nmember `{name}.{member}`" if member in decl.members else "")


def describe_builtin(name: str) -> str | None:
    builtin = BUILTINS.get(name)
    if builtin is None:
        return None
    return f"{_code(builtin.signature)}\n\n{builtin.summary}"


def hover_at(program: CheckedProgram, file: str, line: int, col: int) -> Hover | None:
    module = module_of(program, file)
    node = node_at(module, line, col) if module else None
    if node is None:
        return None
    span = _name_span(node) or node.span
    if isinstance(node, (syntax.RouteAttr, syntax.BackgroundAttr, syntax.AttrOption,
                         syntax.PythonAttr)) and module is not None:
        # On `@get(...)`, `@job(...)` and its options, `@python(...)`: the function it makes a
        # handler, a job, a schedule or a Python function.
        item = enclosing_item(module, line)
        text = describe_function(program, item.name) if isinstance(
            item, syntax.FunctionDef) else None
    elif isinstance(node, syntax.FieldRule) and module is not None:  # the field it is on
        item = enclosing_item(module, line)
        text = next((describe_field(f) for f in getattr(item, "fields", ()) if node in f.rules),
                    None)
    elif isinstance(node, syntax.GuardAttr):  # `@guard(f)` or a name in `guard("/p", f)`
        text = describe_function(program, node.name)
    elif isinstance(node, syntax.GuardDecl):
        text = _prefix_text(program, node)
    else:
        text = _hover_text(program, node)
    return Hover(text, span) if text else None


def _prefix_text(program: CheckedProgram, decl: syntax.GuardDecl) -> str:
    """On `guard("/admin", ...)`: its guards and the routes under the prefix."""
    names = ", ".join(g.name for g in decl.guards)
    methods = "" if decl.methods is None else " on " + " ".join(decl.methods.names)
    mine = {g.name for g in decl.guards}
    routes = [r for r in program.routes
              if any(g.prefix == decl.prefix and g.guard in mine for g in r.guards)]
    where = ", ".join(f"`{r.method} {r.path}`" for r in routes) or "no route"
    return f"guards of prefix `{decl.prefix}`{methods}: {names}\n\nroutes: {where}"


def _hover_text(program: CheckedProgram, node: syntax.Node) -> str | None:
    if isinstance(node, syntax.FunctionDef):
        return describe_function(program, node.name)
    if isinstance(node, syntax.ClassDef):
        return describe_class(program, node.name)
    if isinstance(node, syntax.ConstDef):
        return describe_constant(program, node.name)
    if isinstance(node, syntax.EnumDef):
        return describe_enum(program, node.name)
    if isinstance(node, syntax.Pattern) and node.enum is not None:
        return describe_enum(program, node.enum, node.member)
    if isinstance(node, syntax.Let):
        return _code(f"{node.name}: {_type_text(node.declared_type)}")
    if isinstance(node, syntax.Param):
        return _code(f"{node.name}: {_written(node.annotation)}")
    if isinstance(node, syntax.Field):
        return describe_field(node)
    if isinstance(node, syntax.NamedType):  # `Page[Task]`: that instantiation's fields
        return (describe_class(program, _written(node)) or describe_class(program, node.name)
                or _code(_written(node)))
    if isinstance(node, syntax.Name):
        if node.ref == "function":
            return describe_function(program, node.id)
        if node.ref == "class":
            return describe_class(program, node.id)
        if node.ref == "const":
            return describe_constant(program, node.id)
        if node.ref == "enum":
            return describe_enum(program, node.id)
        if node.ref == "builtin" or (node.ref is None and node.id in BUILTINS):
            return describe_builtin(node.id)
        return _code(f"{node.id}: {_type_text(node.type)}")
    if isinstance(node, syntax.Attribute) and isinstance(node.value, syntax.Name) and \
            node.value.ref == "enum":
        return describe_enum(program, node.value.id, node.attr)
    if isinstance(node, syntax.Attribute):
        return _code(f".{node.attr}: {_type_text(node.type)}")
    if isinstance(node, syntax.Expr):
        return _code(_type_text(node.type))
    return None


def _type_text(t: Type | None) -> str:
    return "unknown" if t is None or t == UNKNOWN else format_type(t)


def _written(texpr: syntax.TypeExpr) -> str:
    if isinstance(texpr, syntax.OptionalType):
        return _written(texpr.inner) + "?"
    if not texpr.args:
        return texpr.name
    return f"{texpr.name}[{', '.join(_written(a) for a in texpr.args)}]"


# --- completion --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # "variable", "function", "class", "builtin", "type", "keyword", "field",
    # "constant", "enum", "enum_member"
    detail: str


_MEMBER = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\.[A-Za-z_0-9]*$")
#: Inside `@guard(` or after the prefix of `guard("/p", `: a guard function's name.
_GUARD_NAME = re.compile(r'^\s*(@guard\(|guard\("[^"]*",(\s*\w+\s*,)*)\s*\w*$')


def completions_at(program: CheckedProgram | None, file: str, line: int, col: int,
                   line_text: str) -> list[Completion]:
    """After `name.`: the fields of name's class. Otherwise every name usable here: the
    variables in scope, the program's functions and classes the file sees, the builtins,
    the type names and the keywords. `program` may be older than `line_text` (the last
    version that parsed), so the scope is found by line."""
    member = _MEMBER.search(line_text[:col - 1])
    if member:
        return _fields_of(program, file, line, member.group(1)) if program else []
    if _GUARD_NAME.search(line_text[:col - 1]):
        return _guard_functions(program) if program else []
    items: list[Completion] = []
    if program is not None:
        items += _locals_in_scope(program, file, line)
        items += _top_level(program, file)
    items += [Completion(n, "builtin", BUILTINS[n].signature) for n in BUILTINS]
    items.append(Completion(RANGE, "builtin", RANGE))
    items += [Completion(n, "type", "type") for n in sorted(TYPE_NAMES)]
    items += [Completion(k, "keyword", "keyword") for k in KEYWORDS]
    first: dict[str, Completion] = {}
    for c in items:
        first.setdefault(c.label, c)  # the first (innermost) meaning of a name wins
    return list(first.values())


def _guard_functions(program: CheckedProgram) -> list[Completion]:
    """The functions that can be guards: they return `Result[T, Error]`, T a class or unit."""
    return [Completion(n, "function", function_signature(i))
            for n, i in program.functions.items()
            if isinstance(i.returns, ResultOf) and (i.returns.ok == UNIT
                                                    or isinstance(i.returns.ok, ClassRef))
            and not i.decl.routes and n != "main"]


def _fields_of(program: CheckedProgram, file: str, line: int, name: str) -> list[Completion]:
    """The fields of a variable's class, or the members of an enum (`Role.`)."""
    t = _type_of_name(program, file, line, name)
    if t is None and name in program.enums and name in visible_names(program, file):
        return [Completion(m, "enum_member", f"{name}.{m}") for m in program.enums[name].members]
    if isinstance(t, Opt):
        t = t.inner
    if not isinstance(t, ClassRef) or t.name not in program.classes:
        return []
    return [Completion(n, "field", format_type(ft)) for n, ft in program.classes[t.name].fields]


def _type_of_name(program: CheckedProgram, file: str, line: int, name: str) -> Type | None:
    """The type of variable `name` in the function holding `line`: its nearest typed use or
    declaration at or before that line."""
    for c in _locals_in_scope(program, file, line, everything=True):
        if c.label == name:
            return c.type  # type: ignore[attr-defined]
    return None


@dataclass(frozen=True)
class _Local(Completion):
    type: Type | None = None


def _locals_in_scope(program: CheckedProgram, file: str, line: int,
                     everything: bool = False) -> list[Completion]:
    """Parameters, and variables declared before `line` in the enclosing function (all
    variables of the function when `everything`: to find a name's type)."""
    module = module_of(program, file)
    item = enclosing_item(module, line) if module else None
    if not isinstance(item, syntax.FunctionDef) or item.name not in program.functions:
        return []
    info = program.functions[item.name]
    found: list[Completion] = [_Local(n, "variable", format_type(t), t) for n, t in info.params]
    for node in sorted(syntax.walk(item), key=lambda n: (n.span.line, n.span.col)):
        if node.span.line > line and not everything:
            break
        declared = _declared(node)
        if declared is not None:
            found.append(_Local(declared[0], "variable", _type_text(declared[1]), declared[1]))
    return found


def _declared(node: syntax.Node) -> tuple[str, Type | None] | None:
    if isinstance(node, syntax.Let):
        return node.name, node.declared_type
    if isinstance(node, syntax.Assign) and node.declares and isinstance(node.target, syntax.Name):
        return node.target.id, node.target.type
    if isinstance(node, syntax.For):
        elem = getattr(node.iter.type, "elem", None)
        if node.iter_kind == "map":  # a Map's keys
            return node.var, STR
        return node.var, (elem if node.iter_kind == "list" else None)
    return None


def _top_level(program: CheckedProgram, file: str) -> list[Completion]:
    visible = visible_names(program, file)
    items = [Completion(n, "function", function_signature(i))
             for n, i in program.functions.items() if n in visible]
    items += [Completion(n, "class", f"class {n}") for n in program.classes if n in visible]
    items += [Completion(n, "constant", f"{n}: {format_type(i.type)}")
              for n, i in program.constants.items() if n in visible]
    items += [Completion(n, "enum", f"enum {n}: {', '.join(d.members)}")
              for n, d in program.enums.items() if n in visible]
    items += [Completion(n, "class", f"class {n}[{', '.join(p.name for p in i.decl.type_params)}]")
              for n, i in program.generic_classes.items() if n in visible]
    return items


def visible_names(program: CheckedProgram, file: str) -> set[str]:
    """The top-level names `file` may use: its own, and those its imports bring in."""
    own: dict[str, set[str]] = {}
    for table in (program.functions, program.classes, program.generic_classes,
                  program.constants):
        for name, info in table.items():
            own.setdefault(info.file, set()).add(name)
    for m in program.modules:  # enums: their declarations hold no file
        own.setdefault(m.path, set()).update(
            item.name for item in m.items if isinstance(item, syntax.EnumDef))
    names = set(own.get(file, ()))
    module = module_of(program, file)
    for item in module.items if module else ():
        if isinstance(item, syntax.Import) and item.resolved_path in own:
            theirs = own[item.resolved_path]
            names |= theirs if item.names is None else theirs & set(item.names)
    return names


# --- document symbols -------------------------------------------------------------------------

@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str  # "class", "field", "function", "route", "job", "schedule", "constant", "enum",
    # "enum_member"
    detail: str
    span: Span  # the whole item
    name_span: Span
    children: tuple["Symbol", ...] = ()


def symbols(module: syntax.Module, program: CheckedProgram | None = None) -> list[Symbol]:
    """The classes (with their fields), functions, routes, jobs and schedules of one file, in
    file order (a route, job or schedule just before its function). Works on a parsed module
    alone; `program` adds the checked signatures."""
    found: list[Symbol] = []
    for item in module.items:
        if isinstance(item, syntax.ClassDef):
            fields = tuple(Symbol(f.name, "field", _written(f.annotation), f.span,
                                  _name_span(f) or f.span) for f in item.fields)
            whole = item.span.to(item.fields[-1].span) if item.fields else item.span
            found.append(Symbol(item.name, "class", "class", whole, item.name_span, fields))
        elif isinstance(item, syntax.EnumDef):
            members = tuple(Symbol(m, "enum_member", f"{item.name}.{m}", at, at)
                            for m, at in zip(item.members, item.member_spans))
            found.append(Symbol(item.name, "enum", "enum", item.span, item.name_span, members))
        elif isinstance(item, syntax.ConstDef):
            found.append(Symbol(item.name, "constant", _written(item.annotation), item.span,
                                item.name_span))
        elif isinstance(item, syntax.GuardDecl):
            found.append(Symbol(f"guard {item.prefix}", "guard",
                                ", ".join(g.name for g in item.guards), item.span,
                                item.prefix_span))
        elif isinstance(item, syntax.FunctionDef):
            info = program.functions.get(item.name) if program else None
            same = info is not None and info.decl.name_span == item.name_span
            detail = function_signature(info) if info is not None and same else "def"
            if item.python is not None:
                detail = f"{python_declaration(item.python)} {detail}"
            for r in item.routes:
                found.append(Symbol(f"{r.method} {r.path}", "route", f"handler {item.name}",
                                    r.span, r.path_span))
            for b in item.background:
                role = "job" if b.kind is TriggerKind.JOB else "schedule"
                found.append(Symbol(f"{b.kind.value} {b.text}", role, f"handler {item.name}",
                                    b.span, b.text_span))
            found.append(Symbol(item.name, "function", detail, item.span, item.name_span))
    return found
