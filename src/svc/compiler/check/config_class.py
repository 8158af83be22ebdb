"""The classes `config[T]()` reads (docs/reference/builtins.md, `config`): the rule for `T`,
the fields' run-time descriptions, and the check of `svc.toml`'s `[config]` table against
them (svc.rules.config_values has the rules values are read by).

- `T` is a class whose fields are `i64`, `i32`, `f64`, `bool`, `str`, enums or `T?` of
  those, and no two of its fields read one environment variable (`a` and `A`).
- Every key of `[config]` is read by a field of some class the program uses with `config`
  (a key nobody reads is most likely a misspelt one), and its value fits that field's type.
  Keys naming secrets never reach here: svc.project refuses them.
"""

from __future__ import annotations

from svc.compiler.check.context import suggest
from svc.compiler.program import CheckedProgram
from svc.compiler.svctypes import BOOL, F64, I32, I64, STR, ClassRef, EnumRef, Opt, Type, \
    format_type
from svc.rules.config_values import FieldSpec, env_name, from_toml

_KINDS: dict[Type, str] = {I64: "i64", I32: "i32", F64: "f64", BOOL: "bool", STR: "str"}

RULE = "config[T] needs a class whose fields are i64, i32, f64, bool, str, enums or T? of those"


def _kind(t: Type) -> tuple[str, bool, tuple[str, ...]] | None:
    """(kind, optional, enum members) of a field type a configuration class may have."""
    optional = isinstance(t, Opt)
    inner = t.inner if isinstance(t, Opt) else t
    if isinstance(inner, EnumRef):
        return "enum", optional, inner.members
    kind = _KINDS.get(inner)
    return (kind, optional, ()) if kind is not None else None


def class_problem(program: CheckedProgram, t: Type) -> str | None:
    """Why `t` cannot be the T of `config[T]()`, or None."""
    if not isinstance(t, ClassRef):
        return f"found {format_type(t)}"
    variables: dict[str, str] = {}
    for name, ft in program.classes[t.name].fields:
        if _kind(ft) is None:
            return f"field '{name}' of {t.name} is {format_type(ft)}"
        earlier = variables.setdefault(env_name(name), name)
        if earlier != name:
            return (f"fields '{earlier}' and '{name}' of {t.name} would both be read from "
                    f"the environment variable {env_name(name)}")
    return None


def field_specs(program: CheckedProgram, class_name: str) -> tuple[FieldSpec, ...]:
    """The run-time description of each field of a configuration class, in order."""
    specs = []
    for name, ft in program.classes[class_name].fields:
        kind = _kind(ft)
        assert kind is not None, f"config class {class_name} has a field of type {ft}"
        specs.append((name, *kind))
    return tuple(specs)


def table_problems(program: CheckedProgram, table: dict[str, object]) -> list[tuple[str, str]]:
    """(key, message) for each key of svc.toml's `[config]` that no configuration class reads,
    or whose value does not fit a field reading it."""
    readers: dict[str, list[tuple[str, FieldSpec]]] = {}
    for class_name in program.config_classes:
        for spec in field_specs(program, class_name):
            readers.setdefault(spec[0], []).append((class_name, spec))
    problems = []
    for key, value in table.items():
        if key not in readers:
            used = ", ".join(program.config_classes) or "none"
            problems.append((key, f"no config[T] class has a field '{key}' to read this key of "
                                  f"svc.toml [config] (config classes: {used})"
                                  f"{suggest(key, list(readers))}"))
            continue
        for class_name, (name, kind, _optional, members) in readers[key]:
            ok, why = from_toml(value, kind, members)
            if not ok:
                problems.append((key, f"'{key}' in svc.toml [config] ({class_name}.{name}) "
                                      f"must be {why}"))
                break
    return problems
