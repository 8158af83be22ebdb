"""svc types as TypeScript types, and the declarations of the classes and enums a program's
routes expose: what the server reads and writes as JSON (docs/reference/http.md).

A class is an interface of its JSON fields; a generic class one generic interface, and each
of its uses (`Page[Task]`, a class of its own in the checked program) that interface with its
type arguments (`Page<Task>`); an enum is the union of its members' names. Numbers are
`number` (JSON numbers in JavaScript are exact only up to 2^53), bytes a base64 string, as
the server encodes them.
"""

from __future__ import annotations

from svc.compiler.check.field_rules import field_rules
from svc.compiler.program import CheckedProgram, ClassInfo
from svc.compiler.svctypes import (
    BOOL, BYTES, F64, HTML, I32, I64, STR, UNIT, ClassRef, EnumRef, ListOf, MapOf, Opt,
    ResponseOf, Type, TypeParam, View,
)
from svc.rules.field_rules import message
from svc.tools.openapi import exposed_classes
from svc.tools.openapi_schemas import inner_types

_SCALARS: dict[Type, str] = {
    I64: "number", I32: "number", F64: "number", BOOL: "boolean", STR: "string",
    HTML: "string", BYTES: "string", View(BYTES): "string", UNIT: "null",
}


def ts_type(program: CheckedProgram, t: Type) -> str:
    """The TypeScript type of the JSON value of an svc type."""
    if t in _SCALARS:
        return _SCALARS[t]
    if isinstance(t, Opt):
        return f"{ts_type(program, t.inner)} | null"
    if isinstance(t, ListOf):
        elem = ts_type(program, t.elem)
        return f"({elem})[]" if " " in elem else f"{elem}[]"
    if isinstance(t, MapOf):
        return f"Record<string, {ts_type(program, t.value)}>"
    if isinstance(t, ResponseOf):
        return ts_type(program, t.body)
    if isinstance(t, (EnumRef, TypeParam)):
        return t.name
    if isinstance(t, ClassRef):
        return _class_type(program, t.name)
    return "unknown"  # not reachable for a checked route


def _class_type(program: CheckedProgram, name: str) -> str:
    """A class's name; a generic class's use, its interface with the type arguments."""
    info = program.classes.get(name)
    if info is None and "[" in name:
        return _generic_use(name)
    if info is None or not info.decl.type_params:
        return name
    found = type_arguments(program, info)
    args = [ts_type(program, found[p.name]) if p.name in found else "unknown"
            for p in info.decl.type_params]
    return f"{info.decl.name}<{', '.join(args)}>"


def type_arguments(program: CheckedProgram, use: ClassInfo) -> dict[str, Type]:
    """The type arguments of a generic class's use, read off its fields: where the generic
    class has `T`, the use has T's argument. (The checked program names a use `Page[Task]`
    but keeps its arguments only in its fields.)"""
    template = program.generic_classes[use.decl.name]
    found: dict[str, Type] = {}
    for (_, generic), (_, actual) in zip(template.fields, use.fields):
        _match(generic, actual, found)
    return found


def _match(generic: Type, actual: Type, found: dict[str, Type]) -> None:
    if isinstance(generic, TypeParam):
        found.setdefault(generic.name, actual)
    elif isinstance(generic, Opt) and isinstance(actual, Opt):
        _match(generic.inner, actual.inner, found)
    elif isinstance(generic, ListOf) and isinstance(actual, ListOf):
        _match(generic.elem, actual.elem, found)
    elif isinstance(generic, MapOf) and isinstance(actual, MapOf):
        _match(generic.value, actual.value, found)


def _generic_use(name: str) -> str:
    """A use of a generic class inside another generic class's fields, made with its type
    parameters (`Page[T]`): such uses are not classes of the checked program, only names.
    `Page<T>` when its arguments are plain parameters; else `unknown` (not yet: a nested
    `Page[List[T]]` in a generic class)."""
    base, _, inside = name.partition("[")
    args = [part.strip() for part in inside.rstrip("]").split(",")]
    if all(arg.isidentifier() for arg in args):
        return f"{base}<{', '.join(args)}>"
    return "unknown"


# --- declarations -------------------------------------------------------------------------------

def declarations(program: CheckedProgram) -> list[str]:
    """The enums, then the classes (generic ones once, as generic interfaces), that the routes
    read or answer, in the program's order of declaration."""
    exposed = exposed_classes(program)
    classes: dict[str, ClassInfo] = {}
    for name, info in program.classes.items():
        if name in exposed:
            generic = info.decl.type_params
            key = info.decl.name
            classes.setdefault(key, program.generic_classes[key] if generic else info)
    enums = _exposed_enums(program, exposed)
    out = [_enum(program, name) for name in program.enums if name in enums]
    return out + [_interface(program, info) for info in classes.values()]


def _exposed_enums(program: CheckedProgram, exposed: set[str]) -> set[str]:
    """The enums of the routes' parameters and results and of the exposed classes' fields."""
    from svc.tools.openapi import route_ok_type

    types = [route_ok_type(program, r) for r in program.routes]
    types += [p.type for r in program.routes for p in r.params]
    types += [t for name in exposed for _, t in program.classes[name].fields]
    found: set[str] = set()
    while types:
        t = types.pop()
        if isinstance(t, EnumRef):
            found.add(t.name)
        types += inner_types(t)
    return found


def _enum(program: CheckedProgram, name: str) -> str:
    members = " | ".join(f'"{m}"' for m in program.enums[name].members)
    return f"export type {name} = {members};\n"


def _interface(program: CheckedProgram, info: ClassInfo) -> str:
    """A class's interface: each field by its JSON name, its rules in a doc comment."""
    rules = field_rules(info.decl)
    params = ", ".join(p.name for p in info.decl.type_params)
    lines = [f"export interface {info.name}{f'<{params}>' if params else ''} {{"]
    for field, t in info.fields:
        said = [f"{field} {message(rule)}" for rule in rules.get(field, ())]
        if said:
            lines.append(f"  /** {'; '.join(said)} */")
        lines.append(f"  {field}: {ts_type(program, t)};")
    return "\n".join(lines + ["}"]) + "\n"
